"""What a PyTorch user would write instead of lemmalab's GPU compressors, timed on the same card
for scripts/gpu-check: top-k of 1% with error feedback on 100M floats (u = x + e; send the k
largest |u_j|; e = u with those entries zeroed). Prints JSON: microseconds per call, the median of
20 after 3 untimed, and the device's name."""
import json

import torch


def median_us(body, runs=20, warmup=3):
    for _ in range(warmup):
        body()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        body()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def main():
    d = 100_000_000
    k = d // 100
    generator = torch.Generator(device="cuda").manual_seed(1)
    x = torch.rand(d, device="cuda", generator=generator) * 3 - 1.5
    e = torch.rand(d, device="cuda", generator=generator) * 3 - 1.5

    def topk_with_feedback():
        u = x + 0.5 * e
        index = torch.topk(u.abs(), k, sorted=False).indices
        values = u[index]
        u[index] = 0
        e.copy_(u)
        return index, values

    print(json.dumps({"device": torch.cuda.get_device_name(),
                      "topk_ef_us": median_us(topk_with_feedback)}))


if __name__ == "__main__":
    main()
