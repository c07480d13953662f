"""What moving the image costs in the N=8 image row: the same envs' work served with and
without their 84x84x4 observations, beside ``AsyncVectorEnv``.

    python benchmarks/bench_payload.py [--reps 5] [--window 1.5]

Two ``openenv-gym serve`` processes on 127.0.0.1, both with their defaults (busy polling
on): one serves ``_envs:make_image_env`` (each step draws 28 KB of random bytes and
returns them as the observation), the other ``_envs:make_image_work_env`` (draws the same
bytes, returns one of them). A ``RemoteVectorEnv`` of 8 envs, batched, steps each (the image
env twice: its observations through a shared section, the default on one machine, and
through the socket, ``shared_memory=False``), and ``AsyncVectorEnv`` steps 8 image envs in
the client's process tree, each config in a client process of its own, the configs
interleaved within each rep. The step rate without the image over the rate with it says
what the 225 KB reply costs a step: through the socket, encoding it, the kernel's two copies,
decoding it, the copy ``copy=True`` asks for; through the section, a copy in, a copy out and
that last copy. Writes ``benchmarks/results/payload.json`` and its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = ROOT / "benchmarks" / "results" / "payload.json"
DOC_TAG = "payload"
NUM_ENVS = 8
SERVERS = {"image": "_envs:make_image_env", "work": "_envs:make_image_work_env"}
#: Each config: its label, and the server it steps (``None``: AsyncVectorEnv, no server).
CONFIGS = {
    "async": ("gymnasium AsyncVectorEnv, 8 image envs (shared memory, 8 worker processes)", None),
    "image": ("RemoteVectorEnv batched, the image env (84x84x4 observations; shared section)", "image"),
    "socket": ("RemoteVectorEnv batched, the image env, its observations through the socket "
               "(`shared_memory=False`)", "image"),
    "work": ("RemoteVectorEnv batched, the same work, 1-byte observations", "work"),
}
RATIOS = [
    ("image / AsyncVectorEnv (the N=8 image row)", "image", "async"),
    ("image through the socket / AsyncVectorEnv", "socket", "async"),
    ("no image / AsyncVectorEnv", "work", "async"),
    ("image: shared section / socket", "image", "socket"),
    ("no image / image through the socket: what moving the image through the socket costs a step",
     "work", "socket"),
    ("no image / image: what the image still costs a step with a shared section", "work", "image"),
]


def main(argv: list[str] | None = None) -> int:
    args = H.reps_parser(__doc__, window=1.5).parse_args(argv)
    run = H.run_record(__file__, argv, args, ["gymnasium", "numpy", "msgpack", "openenv-gym"])
    processes = H.ProcessSet()
    rates: dict[str, list[float]] = {name: [] for name in CONFIGS}
    try:
        servers = {
            name: processes.add(H.Server(
                f"payload-{name}", lambda port, env=env: H.openenv_gym_argv("serve", env, "--port", port),
                ready="http:/health", env=H.python_env(), cwd=ROOT,
                log_path=HERE / "results" / "logs" / f"payload-{name}.log",
            )).start()
            for name, env in SERVERS.items()
        }
        for name, server in servers.items():
            if not server.wait_ready(60):
                raise RuntimeError(f"server {name} failed: {server.error}")
        worker = processes.add(H.ClientWorker("payload", log_path=HERE / "results" / "logs" / "payload-client.log"))
        worker.start()
        for rep, name in H.interleaved(list(CONFIGS), args.reps):
            server = servers[CONFIGS[name][1]] if CONFIGS[name][1] else None
            params = {"kind": "async", "env": "image", "num_envs": NUM_ENVS}
            if server is not None:
                params = {"kind": "batched", "env": "image", "num_envs": NUM_ENVS, "base_url": server.base_url,
                          "remote": {"mode": "batched", "encoding": "msgpack", "shared_memory": name != "socket"}}
            _, result = worker.measure("bench_vector:VecClient", params, server=server, window_s=args.window,
                                       max_iters=10 ** 6, warmup_s=0.2, warmup_iters=50)
            rates[name].append(result["steps_per_s"])
            H.progress(f"rep {rep + 1} {name:6s} {H.fmt(result['steps_per_s'])} steps/s")
    finally:
        processes.stop_all()
    ratios = {label: H.summarize(H.paired_ratios(rates[a], rates[b])) for label, a, b in RATIOS}
    data = {**run, "steps_per_s": rates, "ratios": ratios}
    H.publish(data, RESULTS_PATH, render, None if args.no_doc else DOC_TAG)
    return 0


def render(data: dict) -> str:
    lines = [
        *H.run_heading("The N=8 image row: what moving the image costs", data),
        "Two servers, busy polling on (the default): one serves the image env, the other the same "
        "work with a 1-byte observation (`_envs.RandomImageWorkEnv`: each step draws the same 28 KB "
        "of random bytes). What the second gains over the first is what the 225 KB reply of a step "
        "of 8 envs costs: through the socket (`shared_memory=False`), encoding it, the kernel's two "
        "copies, decoding it, and the copy that `copy=True` asks for; through a shared section (the "
        "default on one machine, docs/operations.md), a copy in, a copy out and that last copy.",
        "",
        "| client | batched steps/s (8 envs each) |",
        "|---|---|",
    ]
    for name, (label, _) in CONFIGS.items():
        lines.append(f"| {label} | {H.fmt_mmm(H.summarize(data['steps_per_s'][name]))} |")
    lines += ["", "| ratio (per-rep pairs) | measured |", "|---|---|"]
    for label, ratio in data["ratios"].items():
        lines.append(f"| {label} | {H.fmt_mmm(ratio)}x |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
