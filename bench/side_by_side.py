#!/usr/bin/python3
"""lemmalab's training steps next to the loops a user would otherwise write, in one invocation.

Runs, alternating round by round so that a noisy machine hits every side alike:
  - build/release/bench/step_bench (lemmalab's median step as a run takes it), and
  - the same step written in PyTorch (MLP 784-256-10 on Fashion-MNIST and logistic regression on
    784 Gaussian features; 8 simulated workers x 64 samples; fp32; Adam, and for the MLP a 1-bit
    Adam simulation: scaled-sign compression of the momentum with worker and server error
    feedback, the variance frozen) and in numpy (the logistic regression).
Prints each workload's median step per side over the rounds and lemmalab's ratio to it.

    bench/side_by_side.py [--rounds 3] [--threads 2]

Uses Debian's python3-numpy and, when installed, python3-torch (sides that need a missing module
are reported as skipped). Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset so that numpy,
PyTorch and lemmalab all use the kernels OpenBLAS selects for this CPU.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP_BENCH = os.path.join(ROOT, "build", "release", "bench", "step_bench")
FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
WORKERS, BATCH, STEPS = 8, 64, 60


def median_step(step, steps=STEPS):
    """The median wall time of `step()` over `steps` calls, after 3 untimed ones."""
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fashion_pixels():
    with gzip.open(FASHION, "rb") as f:
        raw = f.read()
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 784)


def gaussian_logreg(rng):
    a = rng.standard_normal((8192, 784)).astype(np.float32)
    w = rng.standard_normal(784).astype(np.float32) / 28
    y = (rng.random(8192) < 1 / (1 + np.exp(-a @ w))).astype(np.float32)
    return a, y


def numpy_logreg_adam(rng):
    a, y = gaussian_logreg(rng)
    x = np.zeros(784, np.float32)
    m, v = np.zeros_like(x), np.zeros_like(x)
    t = [0]

    def step():
        g = np.zeros_like(x)
        for _ in range(WORKERS):
            rows = rng.integers(0, len(a), BATCH)
            ab = a[rows]
            p = 1 / (1 + np.exp(-(ab @ x)))
            g += ab.T @ (p - y[rows]) / BATCH
        g /= WORKERS
        t[0] += 1
        m[:] = 0.9 * m + 0.1 * g
        v[:] = 0.999 * v + 0.001 * g * g
        mhat, vhat = m / (1 - 0.9 ** t[0]), v / (1 - 0.999 ** t[0])
        x[:] -= 1e-3 * mhat / (np.sqrt(vhat) + 1e-8)

    return step


def torch_steps(threads):
    """The PyTorch workloads: name -> step function (empty when torch is missing)."""
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)

    def workers_grad(params, loss_of, data, labels):
        grads = [torch.zeros_like(p) for p in params]
        for _ in range(WORKERS):
            rows = torch.randint(0, len(data), (BATCH,), generator=gen)
            loss = loss_of(data[rows], labels[rows])
            for acc, g in zip(grads, torch.autograd.grad(loss, params)):
                acc += g
        return [g / WORKERS for g in grads]

    pixels = torch.from_numpy(fashion_pixels().astype(np.float32) / 255)
    digits = torch.randint(0, 10, (len(pixels),), generator=gen)

    def mlp():
        w1 = (torch.rand(256, 784, generator=gen) - 0.5).mul_(0.17).requires_grad_()
        w2 = (torch.rand(10, 256, generator=gen) - 0.5).mul_(0.3).requires_grad_()
        b1, b2 = torch.zeros(256, requires_grad=True), torch.zeros(10, requires_grad=True)
        params = [w1, b1, w2, b2]

        def loss_of(a, y):
            h = torch.relu(a @ w1.T + b1)
            return torch.nn.functional.cross_entropy(h @ w2.T + b2, y)

        return params, loss_of

    def adam_mlp():
        params, loss_of = mlp()
        opt = torch.optim.Adam(params, lr=1e-3)

        def step():
            grads = workers_grad(params, loss_of, pixels, digits)
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()

        return step

    def onebit_adam_mlp():
        params, loss_of = mlp()
        flat = [p.detach().view(-1) for p in params]
        d = sum(p.numel() for p in flat)
        m = [torch.zeros(d) for _ in range(WORKERS)]
        e = [torch.zeros(d) for _ in range(WORKERS)]
        e_server, v = torch.zeros(d), torch.full((d,), 1e-4)

        def scaled_sign(u):
            return torch.sign(u) * (u.norm() / d**0.5)

        def step():
            with torch.no_grad():
                x = torch.cat(flat)
            sent = torch.zeros(d)
            for i in range(WORKERS):
                rows = torch.randint(0, len(pixels), (BATCH,), generator=gen)
                loss = loss_of(pixels[rows], digits[rows])
                g = torch.cat([q.view(-1) for q in torch.autograd.grad(loss, params)])
                m[i].mul_(0.9).add_(g, alpha=0.1)
                u = m[i] + e[i]
                c = scaled_sign(u)
                e[i] = u - c
                sent += c
            u = sent / WORKERS + e_server
            c = scaled_sign(u)
            e_server.copy_(u - c)
            x -= 1e-3 * c / (v.sqrt() + 1e-8)
            with torch.no_grad():
                offset = 0
                for p in flat:
                    p.copy_(x[offset : offset + p.numel()])
                    offset += p.numel()

        return step

    def adam_logreg():
        a, y = (torch.from_numpy(z) for z in gaussian_logreg(np.random.default_rng(2)))
        x = torch.zeros(784, requires_grad=True)
        opt = torch.optim.Adam([x], lr=1e-3)

        def loss_of(ab, yb):
            return torch.nn.functional.binary_cross_entropy_with_logits(ab @ x, yb)

        def step():
            (x.grad,) = workers_grad([x], loss_of, a, y)
            opt.step()

        return step

    return {"mlp_adam": adam_mlp(), "mlp_onebit_adam": onebit_adam_mlp(),
            "logreg_adam": adam_logreg()}


def lemmalab_steps():
    """step_bench's median step per workload, in seconds."""
    out = subprocess.run([STEP_BENCH, "--benchmark_format=json"], check=True,
                         capture_output=True, text=True).stdout
    return {b["name"].split("/")[1]: b["step_us"] * 1e-6 for b in json.loads(out)["benchmarks"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    if not os.access(STEP_BENCH, os.X_OK):
        sys.exit(f"side_by_side: {STEP_BENCH} is missing: build the release preset first")
    times = {}  # (workload, side) -> [seconds per round]
    torch_loops = torch_steps(args.threads)
    if not torch_loops:
        print("side_by_side: python3-torch is not installed; the PyTorch side is skipped")
    numpy_loop = numpy_logreg_adam(np.random.default_rng(3))
    for _ in range(args.rounds):
        for name, seconds in lemmalab_steps().items():
            times.setdefault((name, "lemmalab"), []).append(seconds)
        for name, step in torch_loops.items():
            times.setdefault((name, "pytorch"), []).append(median_step(step))
        times.setdefault(("logreg_adam", "numpy"), []).append(median_step(numpy_loop))
    print(f"median step over {args.rounds} rounds, {args.threads} threads")
    print(f"{'workload':<20}{'lemmalab':>12}{'pytorch':>12}{'numpy':>12}"
          f"{'vs pytorch':>12}{'vs numpy':>10}")
    for name in sorted({w for w, _ in times}):
        row = {side: statistics.median(times[(name, side)]) for w, side in times if w == name}
        ours = row.get("lemmalab")
        cells = [f"{row[s] * 1e3:10.3f}ms" if s in row else f"{'-':>12}"
                 for s in ("lemmalab", "pytorch", "numpy")]
        ratios = [f"{row[s] / ours:.2f}x" if s in row and ours else "-"
                  for s in ("pytorch", "numpy")]
        print(f"{name:<20}{''.join(cells)}{ratios[0]:>12}{ratios[1]:>10}")
    print("vs X: X's step over lemmalab's (above 1: lemmalab is faster)")


if __name__ == "__main__":
    main()
