#!/usr/bin/env python
"""From what size a shared section beats the socket: batched steps of 1 to 8 image envs,
their observations through a section and through the socket, side by side.

    python benchmarks/bench_section_sizes.py [--reps 5] [--window 1.5]

Where :data:`openenv_gym.protocol.codecs.SHARED_SECTION_BYTES` comes from. One server
(``_envs:make_image_env``, 84x84x4 uint8 frames of 28,224 bytes, busy polling on: the
defaults), started with that threshold at 0, so that every reply with arrays may go through
a section; a ``RemoteVectorEnv`` of N envs, batched, with ``shared_memory=True`` and
``False``, for N in 1, 2, 3, 4, 8 (28 KB to 226 KB of observations a step). Each config is
a client process of its own, the configs interleaved within each rep; the per-rep ratio
section / socket of each N says whether the section pays at that size. Writes
``benchmarks/results/section_sizes.json`` and its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = ROOT / "benchmarks" / "results" / "section_sizes.json"
DOC_TAG = "section-sizes"
FRAME_BYTES = 84 * 84 * 4
NUM_ENVS = (1, 2, 3, 4, 8)
#: ``openenv-gym serve`` with every array section eligible for a shared section.
SERVE_WITHOUT_THRESHOLD = (
    "import sys; import openenv_gym.protocol.codecs as codecs; codecs.SHARED_SECTION_BYTES = 0; "
    "from openenv_gym.cli import main; sys.exit(main(sys.argv[1:]))"
)


def main(argv: list[str] | None = None) -> int:
    args = H.reps_parser(__doc__, window=1.5).parse_args(argv)
    run = H.run_record(__file__, argv, args, ["gymnasium", "numpy", "msgpack", "openenv-gym"])
    configs = [(n, shared) for n in NUM_ENVS for shared in (True, False)]
    rates: dict[str, list[float]] = {f"{n}/{shared}": [] for n, shared in configs}
    processes = H.ProcessSet()
    try:
        server = processes.add(H.Server(
            "section-sizes",
            lambda port: [sys.executable, "-c", SERVE_WITHOUT_THRESHOLD, "serve", "_envs:make_image_env",
                          "--port", port],
            ready="http:/health", env=H.python_env(), cwd=ROOT,
            log_path=HERE / "results" / "logs" / "section-sizes.log",
        )).start()
        if not server.wait_ready(60):
            raise RuntimeError(f"the server failed: {server.error}")
        log_path = HERE / "results" / "logs" / "section-sizes-client.log"
        worker = processes.add(H.ClientWorker("section-sizes", log_path=log_path))
        worker.start()
        for rep, (n, shared) in H.interleaved(configs, args.reps):
            params = {"kind": "batched", "env": "image", "num_envs": n, "base_url": server.base_url,
                      "remote": {"mode": "batched", "encoding": "msgpack", "shared_memory": shared}}
            _, result = worker.measure("bench_vector:VecClient", params, server=server, window_s=args.window,
                                       max_iters=10 ** 6, warmup_s=0.2, warmup_iters=50)
            rates[f"{n}/{shared}"].append(result["steps_per_s"])
            way = "section" if shared else "socket "
            H.progress(f"rep {rep + 1} N={n} {way} {H.fmt(result['steps_per_s'])} steps/s")
    finally:
        processes.stop_all()
    data = {**run, "steps_per_s": rates}
    H.publish(data, RESULTS_PATH, render, None if args.no_doc else DOC_TAG)
    return 0


def render(data: dict) -> str:
    rates = data["steps_per_s"]
    lines = [
        *H.run_heading("From what size a shared section pays", data),
        "One server of 84x84x4 uint8 frames (busy polling on), its threshold for shared sections set "
        "to 0; `RemoteVectorEnv` batched with its observations through a section and through the "
        "socket (`shared_memory=False`). Where the ratio stays under 1, the socket is the cheaper "
        "way: `SHARED_SECTION_BYTES` (64 KiB) keeps those sizes in the frame.",
        "",
        "| envs | observations a step | through a section (steps/s) | through the socket (steps/s) "
        "| section / socket (per rep) |",
        "|---|---|---|---|---|",
    ]
    for n in NUM_ENVS:
        shared, socket = rates[f"{n}/True"], rates[f"{n}/False"]
        lines.append(
            f"| {n} | {n * FRAME_BYTES:,} B | {H.fmt_mmm(H.summarize(shared))} | {H.fmt_mmm(H.summarize(socket))} | "
            f"{H.fmt_mmm(H.summarize(H.paired_ratios(shared, socket)))}x |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
