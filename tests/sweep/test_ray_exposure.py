"""The private Ray instance listens beyond loopback (Ray 2.60 gives no way not to), so the
token is what protects it: nothing here may turn it off (issue 19 item 9)."""

from __future__ import annotations

from pipeline.sweep import actors


def test_the_private_instance_keeps_token_authentication() -> None:
    assert "RAY_AUTH_MODE" not in actors.LOOPBACK_ENV


def test_init_ray_does_not_claim_a_loopback_only_instance() -> None:
    doc = actors.init_ray.__doc__ or ""
    assert "private loopback instance" not in doc
    assert "every interface" in doc and "docs/reliability.md" in doc
