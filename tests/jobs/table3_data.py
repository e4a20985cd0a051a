"""The paper's Table 3 (primary j/q panel), rebuilt at row level.

Each configuration lists passed checks (out of 14) per row: `j` and `q` are the complete
pairs, in repeat order; `j_unpaired` / `q_unpaired` are valid rows whose partner's final
attempt is invalid (the sparse cells). The counts were chosen so that every per-configuration
paired mean, row count and pair count equals the published value, and the arm means too,
except where the paper's own rounding makes that impossible:

- deepseek-v4-flash q (published 0.947) and gemma-4-26b-a4b-it j (0.947) are 53 of 56
  checks; 53/56 = 0.94643 rounds to 0.946. No four k/14 recalls give 0.947. The published
  figure is what row recalls *stored at three decimals* give: (0.929·3 + 1.000)/4 = 0.94675.
  The rows below (13, 13, 13, 14) are consistent with that explanation; the paired means
  (−0.089, +0.786) are unaffected.
"""

from __future__ import annotations

from typing import NamedTuple

from tests.jobs.jobs_testdata import row


class Table3Config(NamedTuple):
    model: str
    j_mean: float
    q_mean: float
    paired: float
    j_fill: float
    j: list[int]
    q: list[int]
    j_unpaired: list[int]
    q_unpaired: list[int]

    @property
    def family(self) -> str:
        return self.model.split("/")[0]


TABLE3 = [
    Table3Config(
        "deepseek/deepseek-v4-flash",
        0.161,
        0.947,
        +0.786,
        0.81,
        j=[9, 0, 0, 0],
        q=[14, 13, 13, 13],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "deepseek/deepseek-v4-pro",
        1.0,
        1.0,
        +0.000,
        0.49,
        j=[14, 14, 14, 14],
        q=[14, 14, 14, 14],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "google/gemma-4-26b-a4b-it",
        0.947,
        0.857,
        -0.089,
        0.69,
        j=[14, 13, 13, 13],
        q=[14, 14, 14, 6],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "google/gemma-4-31b-it",
        1.0,
        1.0,
        +0.000,
        0.63,
        j=[14, 14, 14, 14],
        q=[14, 14, 14, 14],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "ibm-granite/granite-4.1-8b",
        0.304,
        0.25,
        -0.054,
        0.36,
        j=[9, 9, 9, 8, 8, 8, 0, 0, 0, 0, 0, 0],
        q=[6, 6, 6, 6, 6, 6, 6, 0, 0, 0, 0, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "inclusionai/ling-2.6-1t",
        0.929,
        0.929,
        +0.000,
        0.61,
        j=[14, 14, 14, 10],
        q=[14, 14, 14, 10],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "inclusionai/ling-2.6-flash",
        0.0,
        0.161,
        +0.161,
        0.06,
        j=[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        q=[14, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "minimax/minimax-m3",
        0.643,
        0.875,
        +0.232,
        0.93,
        j=[14, 14, 8, 0],
        q=[14, 14, 14, 7],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "mistralai/mistral-small-2603",
        0.982,
        0.929,
        -0.054,
        0.71,
        j=[14, 14, 14, 13],
        q=[14, 14, 14, 10],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "nvidia/nemotron-3-super-120b-a12b",
        0.982,
        0.589,
        -0.393,
        0.69,
        j=[14, 14, 14, 13],
        q=[14, 14, 5, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "nvidia/nemotron-3-ultra-550b-a55b",
        0.875,
        0.929,
        +0.054,
        0.60,
        j=[14, 14, 14, 7],
        q=[14, 14, 14, 10],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "qwen/qwen3.5-122b-a10b",
        0.0,
        0.714,
        +0.714,
        1.00,
        j=[0, 0, 0, 0],
        q=[14, 14, 12, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "qwen/qwen3.5-35b-a3b",
        0.0,
        0.625,
        +0.619,
        1.00,
        j=[0, 0, 0],
        q=[14, 12, 0],
        j_unpaired=[],
        q_unpaired=[9],
    ),
    Table3Config(
        "qwen/qwen3.5-397b-a17b",
        0.625,
        0.821,
        +0.196,
        0.79,
        j=[14, 14, 7, 0],
        q=[14, 14, 14, 4],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "qwen/qwen3.5-9b",
        0.482,
        0.661,
        +0.179,
        0.81,
        j=[14, 13, 0, 0],
        q=[14, 14, 9, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "qwen/qwen3.6-27b",
        0.75,
        0.536,
        -0.214,
        0.68,
        j=[14, 14, 14, 0],
        q=[14, 14, 2, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "tencent/hy3",
        0.881,
        0.661,
        -0.024,
        0.62,
        j=[14, 14, 9],
        q=[14, 14, 8],
        j_unpaired=[],
        q_unpaired=[1],
    ),
    Table3Config(
        "xiaomi/mimo-v2.5", 0.0, 0.929, +0.929, 0.99, j=[0], q=[13], j_unpaired=[0], q_unpaired=[]
    ),
    Table3Config(
        "xiaomi/mimo-v2.5-pro",
        1.0,
        0.589,
        -0.411,
        0.58,
        j=[14, 14, 14, 14],
        q=[14, 14, 5, 0],
        j_unpaired=[],
        q_unpaired=[],
    ),
    Table3Config(
        "z-ai/glm-5.2",
        0.487,
        0.518,
        +0.078,
        0.59,
        j=[14, 14, 14, 14, 14, 5, 0, 0, 0, 0, 0],
        q=[14, 14, 14, 14, 14, 14, 3, 0, 0, 0, 0],
        j_unpaired=[],
        q_unpaired=[0],
    ),
]

ROUNDING_EXCEPTIONS = {("deepseek/deepseek-v4-flash", "q"), ("google/gemma-4-26b-a4b-it", "j")}
"""Arm means the paper prints at 0.947 that no mean of four k/14 recalls rounds to."""


def table3_rows() -> list[dict[str, object]]:
    """Row-level records: pairs in repeats 0..P-1; each unpaired row sits in its own repeat
    whose partner has an invalid final attempt (reason catch_up) after an infrastructure retry."""
    records: list[dict[str, object]] = []
    for config in TABLE3:
        common = {"model": config.model, "family": config.family}
        for repeat, (j, q) in enumerate(zip(config.j, config.q, strict=True)):
            records.append(row(config.model, "j", repeat, j, fill=config.j_fill, **common))
            records.append(row(config.model, "q", repeat, q, **common))
        repeat = len(config.j)
        for arm, partner, unpaired in (
            ("j", "q", config.j_unpaired),
            ("q", "j", config.q_unpaired),
        ):
            for checks in unpaired:
                fill = {"fill": config.j_fill} if arm == "j" else {}
                records.append(row(config.model, arm, repeat, checks, **fill, **common))
                records.append(
                    row(
                        config.model,
                        partner,
                        repeat,
                        None,
                        attempt=1,
                        valid=False,
                        invalid_reason="transport",
                        retryable=True,
                        **common,
                    )
                )
                records.append(
                    row(
                        config.model,
                        partner,
                        repeat,
                        None,
                        attempt=2,
                        valid=False,
                        invalid_reason="catch_up",
                        **common,
                    )
                )
                repeat += 1
    return records
