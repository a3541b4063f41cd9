#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Record a PyTorch memory snapshot of a small training job, for `memc compare`.

Not run by the tests (it needs a CUDA GPU). It builds the model of
tests/compare/tiny.mem's `tiny` job from a config with random weights
(transformers GPT2Config + GPT2LMHeadModel: 2 layers, hidden 256, 4 heads,
the GPT-2 vocabulary; no download), trains it in fp32 with
torch.optim.AdamW (foreach), micro batch 2 of 128 tokens, and writes
torch.cuda.memory._snapshot() as JSON:

    python3 tests/validation/snapshot.py snap.json
    build/memc compare --job tiny tests/compare/tiny.mem snap.json

    python3 tests/validation/snapshot.py --layers 4 --hidden 512 --heads 8 \\
        --micro-batch 4 --seq-len 256 snap.json     # another size: edit the
                                                    # .mem to match

The first step allocates AdamW's states lazily, so it runs --warmup steps
(default 1) before recording, then records --steps steps (default 1): what
is compared is the steady-state step memc predicts. Recording uses
torch.cuda.memory._record_memory_history(max_entries=...) with Python
stacks, which is what gives the trace the frames docs/compare.md classes
(torch/optim/, backward, loss, forward, _apply). The weights and the
optimizer states were made before recording: the snapshot's blocks keep
their frames, and memc compare categorises them from those.

It also prints torch.cuda.max_memory_allocated() and max_memory_reserved()
of the recorded steps, for a check of the replay's totals.

With --pickle PATH it writes torch.cuda.memory._dump_snapshot(PATH) as
well (for https://pytorch.org/memory_viz); memc reads the JSON only.

Requirements: torch (CUDA) >= 2.1, transformers.
"""

import argparse
import json
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="the JSON snapshot to write")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--warmup", type=int, default=1, help="steps before recording")
    p.add_argument("--steps", type=int, default=1, help="steps recorded")
    p.add_argument("--max-entries", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pickle", help="also write _dump_snapshot() here")
    return p.parse_args()


def build(args, torch):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=args.layers, n_embd=args.hidden, n_head=args.heads,
                     vocab_size=args.vocab, n_positions=max(1024, args.seq_len))
    torch.manual_seed(args.seed)
    model = GPT2LMHeadModel(cfg).to("cuda")   # random weights, fp32
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    return model, opt


def train_step(model, opt, batch):
    out = model(input_ids=batch, labels=batch)
    out.loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def main():
    args = parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("snapshot.py: needs a CUDA GPU (torch.cuda.is_available() is False)")
    model, opt = build(args, torch)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    batch = torch.randint(0, args.vocab, (args.micro_batch, args.seq_len), device="cuda",
                          generator=gen)
    for _ in range(args.warmup):
        train_step(model, opt, batch)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
    for _ in range(args.steps):
        train_step(model, opt, batch)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    if args.pickle:
        torch.cuda.memory._dump_snapshot(args.pickle)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(args.out, "w") as f:
        json.dump(snap, f)
    print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}")
    print(f"max_memory_reserved {torch.cuda.max_memory_reserved()}")
    print(f"wrote {args.out}: {len(snap['segments'])} segments, "
          f"{sum(len(t) for t in snap['device_traces'])} events")


if __name__ == "__main__":
    main()
