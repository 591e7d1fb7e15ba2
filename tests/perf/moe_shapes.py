"""Which index carries a MoE kernel's compute efficiency from one expert shape to another: the
step's token count m (the fit before) or the tokens an expert gets, m·k/E (fit_aic.per_expert_fit).

Run by hand, like fit_aic.py (needs pandas + pyarrow): `python tests/perf/moe_shapes.py [systems]`.
Each expert shape AIConfigurator measured on one kernel (TP 1, its default routing) is fitted alone
and prices every other shape of the same GPU, table, dtype and kernel; the median absolute error of
each index is printed (docs/steptime.md quotes it). Only AIConfigurator's kernel rows are read: no
end-to-end measurement enters this choice.
"""

from __future__ import annotations

import statistics
import sys
from itertools import permutations
from pathlib import Path

import numpy as np
import pandas as pd

from tests.perf.fit_aic import (
    MOE_DISTRIBUTION,
    MOE_WEIGHT_BYTES,
    SYSTEMS,
    current_vllm,
    flat_yaml,
    moe_rows,
    per_expert_fit,
    per_expert_predict,
    roofline_fit,
    roofline_predict,
    version_dir,
)

# H200's vLLM 0.19 table besides the fitted ones: it holds Marlin's int4 experts in eleven shapes.
EXTRA = (("h200_sxm", "0.19.0"),)
KERNEL = ["moe_dtype", "kernel_source"]
SHAPE = ["hidden_size", "inter_size", "num_experts", "topk"]


def tables(systems: Path) -> list[tuple[str, Path]]:
    """The MoE tables fit_aic.py fits (each system's current vLLM's), and EXTRA."""
    versions = (systems / "query_versions.yaml").read_text()
    out = []
    for system in SYSTEMS:
        base = systems / "data" / system / "moe/vllm"
        out.append((system, version_dir(base, current_vllm(versions, system)) / "moe_perf.parquet"))
    return out + [(s, systems / "data" / s / "moe/vllm" / v / "moe_perf.parquet") for s, v in EXTRA]


def cross_errors(src: pd.DataFrame, dst: pd.DataFrame, peak: float, bw: float) -> tuple[float, float]:
    """Median abs % error pricing dst's rows on src's fit: (indexed by m, by tokens an expert)."""
    m, x, nk, nbytes, t = moe_rows(src, 1)
    m2, x2, nk2, nbytes2, t2 = moe_rows(dst, 1)
    t0, eta, ms, tau = roofline_fit(m, nk, nbytes, t, peak, bw)
    by_m = roofline_predict(m2, nk2, nbytes2, t0, eta, bw, ms, tau)
    t0, eta, xs, w = per_expert_fit(m, x, nk, nbytes, t, peak, bw)
    by_x = per_expert_predict(m2, x2, nk2, nbytes2, t0, eta, bw, xs, w)
    return (
        float(np.median(np.abs(by_m / t2 - 1)) * 100),
        float(np.median(np.abs(by_x / t2 - 1)) * 100),
    )


def main(systems: Path) -> None:
    pairs: list[tuple[float, float]] = []
    marlin: list[tuple[float, float]] = []
    for system, path in tables(systems):
        spec = flat_yaml((systems / f"{system}.yaml").read_text())
        peak, bw = float(spec["gpu.bfloat16_tc_flops"]), float(spec["gpu.mem_bw"])
        df = pd.read_parquet(path)
        df = df[
            (df.distribution == MOE_DISTRIBUTION)
            & (df.moe_ep_size == 1)
            & (df.moe_tp_size == 1)
            & df.moe_dtype.isin(list(MOE_WEIGHT_BYTES))
        ]
        for (dtype, kernel), k in df.groupby(KERNEL):
            shapes = [g for _, g in k.groupby(SHAPE) if g.num_tokens.nunique() >= 8]
            here = [cross_errors(a, b, peak, bw) for a, b in permutations(shapes, 2)]
            if not here:
                continue
            pairs += here
            if "marlin" in kernel.lower():
                marlin += here
            print(
                f"{system} vLLM {path.parent.name} {dtype} {kernel}: {len(shapes)} shapes; median abs % "
                f"by m {statistics.median(p[0] for p in here):.1f}, "
                f"by tokens an expert {statistics.median(p[1] for p in here):.1f}"
            )
    for name, got in (("all", pairs), ("Marlin", marlin)):
        print(
            f"{name}: {len(got)} pairs, median abs % by m {statistics.median(p[0] for p in got):.1f}, "
            f"by tokens an expert {statistics.median(p[1] for p in got):.1f}; "
            f"the latter better in {sum(x < m for m, x in got)}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/tools/aic/core/aiconfigurator_core/systems"))
