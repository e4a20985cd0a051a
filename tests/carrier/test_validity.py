from __future__ import annotations

import pytest

from pipeline.carrier.validity import Validity, ValidityInputs, decide


def test_clean_graded_row_is_valid() -> None:
    assert decide(ValidityInputs(None, False, False, True)) == Validity(True, None, False)


def test_infrastructure_fault_is_invalid_and_retryable() -> None:
    v = decide(ValidityInputs("timeout", True, False, False))
    assert v == Validity(False, "infrastructure:timeout", True)


def test_deterministic_rejection_is_invalid_and_never_retried() -> None:
    v = decide(ValidityInputs("rejected:context_too_long", False, False, False))
    assert v == Validity(False, "rejected:context_too_long", False)


def test_catch_up_is_invalid_and_never_retried() -> None:
    assert decide(ValidityInputs(None, False, True, True)) == Validity(False, "catch_up", False)


def test_infrastructure_outranks_catch_up() -> None:
    assert decide(ValidityInputs("http_503", True, True, False)).retryable


def test_missing_grade_without_error_is_a_bug_not_data() -> None:
    with pytest.raises(ValueError, match="graded answer"):
        decide(ValidityInputs(None, False, False, False))


def test_protocol_layer_never_imports_aiohttp_or_ray() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pipeline.carrier, pipeline.carrier.trajectory;"
        "print(sorted(m for m in ('aiohttp', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
