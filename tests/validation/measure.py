#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Measure training-step memory on a GPU, for memc's validation suite.

Not run in CI (it needs a CUDA GPU). It builds Llama-style models from a
config with random weights (transformers LlamaConfig + LlamaForCausalLM; no
download), trains a few steps in the settings tests/validation/ covers and
prints rows in the format of ../shared/validation/measured.csv, three per
configuration: torch.cuda.max_memory_allocated (metric `allocated`),
torch.cuda.max_memory_reserved (`reserved`) and the memory NVML reports for
this process (`device`, the nvidia-smi figure). Every configuration runs in
a fresh subprocess so that the peaks and the CUDA context are its own.

For every configuration it also writes the matching `.mem` file (one per
row, named after the row id) and prints the rows.tsv lines, so measured rows
can join the suite:

    python3 tests/validation/measure.py --list                 # configurations
    python3 tests/validation/measure.py                        # all, CSV on stdout
    python3 tests/validation/measure.py --only small-true-foreach-b1s512 \\
        --mem-out /tmp/rows --steps 4 --gpu A100_80GB > rows.csv

    # then: cp /tmp/rows/*.mem tests/validation/; append /tmp/rows/rows.tsv
    # to tests/validation/rows.tsv and the CSV rows to the validation data;
    # `make validate` rescores.

--gpu names the stdlib GPU (stdlib/gpus/nvidia.mem) for the `.mem` cluster;
by default it is guessed from torch.cuda.get_device_name(). Requirements:
torch (CUDA), transformers, peft (for the LoRA configurations), and pynvml
(nvidia-ml-py) or the nvidia-smi binary for the device figure.

Settings and their `.mem` spelling:
  precision  true:  model.to(bfloat16), AdamW states bf16      -> bf16_true
             mixed: fp32 model under torch.autocast(bfloat16)   -> amp_bf16
                    (autocast over fp32 parameters: what LitGPT "bf16-mixed"
                    and HF Trainer bf16=True do; the stdlib's bf16_mixed is
                    bf16 weights + fp32 master, a different policy)
  optimizer  torch.optim.AdamW(foreach=True) -> adamw; fused=True -> adamw(impl = fused)
  lora       peft LoraConfig(r=8, lora_alpha=16, q_proj/v_proj, dropout 0)
             -> lora(r = 8, alpha = 16, targets = [q, v], dropout = 0, dtype = <adapter dtype>)
  ckpt       gradient_checkpointing_enable(use_reentrant=False) -> checkpoint = full
  attention  attn_implementation "sdpa" -> flash, "eager" -> eager
  kernels    HF eager modules -> kernels = hf; loss: HF ForCausalLMLoss -> standard
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys

MODELS = {
    # ~0.16B: enough layers to see per-layer activations, small weights
    "small": dict(layers=12, hidden=768, heads=12, kv_heads=12, ffn=2048, vocab=32000),
    # TinyLlama-1.1B layout (GQA 32/4), random weights
    "mid": dict(layers=22, hidden=2048, heads=32, kv_heads=4, ffn=5632, vocab=32000),
}

# (name suffix, precision, optimizer impl, lora, ckpt, attention)
SETTINGS = [
    ("true-foreach", "true", "foreach", False, False, "sdpa"),
    ("true-fused", "true", "fused", False, False, "sdpa"),
    ("mixed-foreach", "mixed", "foreach", False, False, "sdpa"),
    ("mixed-fused", "mixed", "fused", False, False, "sdpa"),
    ("true-fused-ckpt", "true", "fused", False, True, "sdpa"),
    ("true-fused-eager", "true", "fused", False, False, "eager"),
    ("true-lora", "true", "foreach", True, False, "sdpa"),
    ("true-lora-ckpt", "true", "foreach", True, True, "sdpa"),
    ("mixed-lora", "mixed", "foreach", True, False, "sdpa"),
]
SHAPES = [(1, 512), (4, 512), (2, 2048)]

GPU_GUESS = [  # substring of torch.cuda.get_device_name() -> stdlib GPU
    ("H200", "H200"), ("H100 PCIe", "H100_PCIE_80GB"), ("H100", "H100_SXM_80GB"),
    ("B200", "B200"), ("A100-SXM4-40GB", "A100_40GB"), ("A100-PCIE-40GB", "A100_40GB"),
    ("A100", "A100_80GB"), ("A10G", "A10G"), ("L40S", "L40S"), ("L4", "L4"),
    ("RTX A6000", "RTX_A6000"), ("4090", "RTX_4090"), ("3090", "RTX_3090"),
    ("5090", "RTX_5090"), ("V100-SXM2-32GB", "V100_32GB"), ("V100", "V100_16GB"), ("T4", "T4"),
]

CSV_FIELDS = ["id", "source", "model", "method", "precision", "optimizer", "micro_batch",
              "seq_len", "grad_ckpt", "flash_attn", "n_gpus", "dp", "tp", "pp",
              "zero_or_fsdp", "offload", "gpu", "metric", "value_gib", "notes"]

GIB = float(1 << 30)


def configurations():
    out = {}
    for m in MODELS:
        for (suffix, prec, impl, lora, ckpt, attn) in SETTINGS:
            for (b, s) in SHAPES:
                if m == "mid" and not lora and not ckpt and s * b > 4096 and prec == "mixed":
                    continue  # fp32 1.1B full FT at 8k tokens: large on 24 GB cards; keep the grid short
                name = f"{m}-{suffix}-b{b}s{s}"
                out[name] = dict(model=m, precision=prec, impl=impl, lora=lora, ckpt=ckpt,
                                 attention=attn, batch=b, seq=s)
    return out


def nvml_used_bytes():
    """Memory NVML attributes to this process (else the device's used memory)."""
    pid = os.getpid()
    try:
        import pynvml
        pynvml.nvmlInit()
        idx = int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or 0)
        h = pynvml.nvmlDeviceGetHandleByIndex(idx)
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            if p.pid == pid and p.usedGpuMemory:
                return int(p.usedGpuMemory), "nvml process"
        return int(pynvml.nvmlDeviceGetMemoryInfo(h).used), "nvml device used"
    except Exception:
        pass
    try:
        q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
        for line in q.stdout.splitlines():
            p, used = [x.strip() for x in line.split(",")[:2]]
            if int(p) == pid:
                return int(used) * (1 << 20), "nvidia-smi process"
        q = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=30)
        return int(q.stdout.split()[0]) * (1 << 20), "nvidia-smi device used"
    except Exception:
        return None, "unavailable"


def run_one(cfg, steps):
    """Train `steps` steps of one configuration; return a dict of results."""
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    m = MODELS[cfg["model"]]
    torch.manual_seed(0)
    conf = LlamaConfig(vocab_size=m["vocab"], hidden_size=m["hidden"],
                       intermediate_size=m["ffn"], num_hidden_layers=m["layers"],
                       num_attention_heads=m["heads"], num_key_value_heads=m["kv_heads"],
                       max_position_embeddings=max(4096, cfg["seq"]), tie_word_embeddings=False,
                       attn_implementation=cfg["attention"])
    dev = torch.device("cuda")
    dtype = torch.bfloat16 if cfg["precision"] == "true" else torch.float32
    with torch.device(dev):
        model = LlamaForCausalLM(conf).to(dtype)
    model.config.use_cache = False
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    lora_dtype = None
    if cfg["lora"]:
        import peft
        from peft import LoraConfig, get_peft_model
        versions["peft"] = peft.__version__
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj"],
                                                 task_type="CAUSAL_LM"))
        lora_dtype = next(p.dtype for n, p in model.named_parameters() if "lora_A" in n)
    if cfg["ckpt"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, foreach=cfg["impl"] == "foreach",
                            fused=cfg["impl"] == "fused")
    b, s = cfg["batch"], cfg["seq"]
    ids = torch.randint(0, m["vocab"], (b, s), device=dev)
    oom = False
    try:
        for _ in range(steps):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cfg["precision"] == "mixed"):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError:
        oom = True
    used, how = nvml_used_bytes()
    return dict(allocated=torch.cuda.max_memory_allocated(), reserved=torch.cuda.max_memory_reserved(),
                device=used, device_how=how, oom=oom, versions=versions,
                gpu_name=torch.cuda.get_device_name(0),
                params=sum(p.numel() for p in model.parameters()),
                trainable=sum(p.numel() for p in params),
                lora_dtype=str(lora_dtype).replace("torch.", "") if lora_dtype else None)


def guess_gpu(name):
    for sub, gpu in GPU_GUESS:
        if sub in name:
            return gpu
    return None


def mem_text(row_id, cfg, res, metric, value_gib, gpu, steps):
    m = MODELS[cfg["model"]]
    prec = "bf16_true" if cfg["precision"] == "true" else "amp_bf16"
    opt = "adamw" if cfg["impl"] == "foreach" else "adamw(impl = fused)"
    dt = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(res.get("lora_dtype") or "", "bf16")
    vers = ", ".join(f"{k} {v}" for k, v in res["versions"].items())
    lines = [
        f"// {row_id} (TEST=yes): random-weight Llama ({cfg['model']}: {m['layers']} layers, "
        f"hidden {m['hidden']}, {m['heads']}/{m['kv_heads']} heads, ffn {m['ffn']}, vocab {m['vocab']})",
        f"// Source: tests/validation/measure.py on {res['gpu_name']} ({vers}), {steps} steps.",
        f"// Metric: {metric}. Measured: {value_gib:.2f} GiB.",
        "// Settings: " + ("bf16 model" if cfg["precision"] == "true" else "fp32 model under bf16 autocast")
        + f", torch AdamW {cfg['impl']}" + (", peft LoRA r 8 on q_proj/v_proj" if cfg["lora"] else ", full")
        + (", gradient checkpointing" if cfg["ckpt"] else "")
        + f", attn_implementation {cfg['attention']}, HF ForCausalLMLoss.",
        'import "gpus/nvidia"',
        'import "models/llama"',
        'import "optimizers"',
        'import "precision"',
        "",
        f"train {row_id.replace('-', '_')} {{",
        f"  model       = Llama(layers = {m['layers']}, hidden = {m['hidden']}, heads = {m['heads']}, "
        f"kv_heads = {m['kv_heads']}, ffn = {m['ffn']}, vocab = {m['vocab']})",
        f"  cluster     = 1 x {gpu}",
        f"  precision   = {prec}",
        f"  optimizer   = {opt}",
        f"  micro_batch = {cfg['batch']}",
        f"  seq_len     = {cfg['seq']}",
    ]
    if cfg["ckpt"]:
        lines.append("  checkpoint  = full")
    lines.append(f"  attention   = {'flash' if cfg['attention'] == 'sdpa' else 'eager'}")
    lines.append("  kernels     = hf")
    lines.append("  loss        = standard")
    if cfg["lora"]:
        lines.append(f"  finetune    = lora(r = 8, alpha = 16, targets = [q, v], dropout = 0, dtype = {dt})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list configuration names and exit")
    ap.add_argument("--only", nargs="*", help="configuration names (default: all)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--gpu", help="stdlib GPU name for the .mem cluster (default: guessed)")
    ap.add_argument("--mem-out", help="folder for the .mem files and rows.tsv lines")
    ap.add_argument("--prefix", default="MEAS", help="row id prefix (default MEAS)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one config, print JSON
    a = ap.parse_args()

    confs = configurations()
    if a.list:
        print("\n".join(confs))
        return 0
    if a.one:
        print("MEASURE-JSON " + json.dumps(run_one(confs[a.one], a.steps)))
        return 0

    names = a.only or list(confs)
    for n in names:
        if n not in confs:
            print(f"measure.py: unknown configuration {n!r} (see --list)", file=sys.stderr)
            return 2
    if a.mem_out:
        os.makedirs(a.mem_out, exist_ok=True)
    out = csv.DictWriter(sys.stdout, fieldnames=CSV_FIELDS)
    out.writeheader()
    tsv = []
    for i, n in enumerate(names, 1):
        cfg = confs[n]
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", n, "--steps", str(a.steps)],
                           capture_output=True, text=True)
        js = [l for l in p.stdout.splitlines() if l.startswith("MEASURE-JSON ")]
        if p.returncode != 0 or not js:
            print(f"measure.py: {n} failed (rc {p.returncode}):\n{p.stderr[-2000:]}", file=sys.stderr)
            continue
        res = json.loads(js[-1][len("MEASURE-JSON "):])
        if res["oom"]:
            print(f"measure.py: {n}: out of memory (peak allocated {res['allocated'] / GIB:.2f} GiB); no row",
                  file=sys.stderr)
            continue
        gpu = a.gpu or guess_gpu(res["gpu_name"]) or "A100_80GB"
        m = MODELS[cfg["model"]]
        vers = ", ".join(f"{k} {v}" for k, v in res["versions"].items())
        base = dict(
            source=f"memc tests/validation/measure.py ({vers})",
            model=f"random-weight Llama {cfg['model']} ({m['layers']}L h{m['hidden']} "
                  f"{m['heads']}/{m['kv_heads']}H ffn{m['ffn']} V{m['vocab']}; {res['params']} params)",
            method=(f"LoRA r=8 a=16 [q,v] ({res['trainable']} trainable, {res['lora_dtype']})"
                    if cfg["lora"] else "full"),
            precision="bf16-true" if cfg["precision"] == "true" else "bf16 autocast over fp32 (amp)",
            optimizer=f"torch AdamW ({cfg['impl']})", micro_batch=cfg["batch"], seq_len=cfg["seq"],
            grad_ckpt="yes (HF, non-reentrant)" if cfg["ckpt"] else "no",
            flash_attn="SDPA" if cfg["attention"] == "sdpa" else "eager",
            n_gpus=1, dp=1, tp=1, pp=1, zero_or_fsdp="none", offload="none", gpu=res["gpu_name"])
        figures = [("allocated", "max_memory_allocated", res["allocated"]),
                   ("reserved", "max_memory_reserved", res["reserved"]),
                   ("device", f"{res['device_how']} after training", res["device"])]
        for suffix, (metric, what, value) in zip("ARD", figures):
            if value is None:
                continue
            row_id = f"{a.prefix}-{i:02d}{suffix}"
            gib = value / GIB
            out.writerow(dict(base, id=row_id, metric=f"{what} (bytes/2^30)", value_gib=f"{gib:.2f}",
                              notes=f"TEST=yes; orig={value} B; measured on {res['gpu_name']} "
                                    f"({vers}); config {n}; {a.steps} steps, random tokens, "
                                    f"peak includes model build"))
            if a.mem_out:
                with open(os.path.join(a.mem_out, f"{row_id}.mem"), "w") as f:
                    f.write(mem_text(row_id, cfg, res, metric, gib, gpu, a.steps))
                tsv.append(f"{row_id}\tmeasured-{gpu}\t{metric}\t{gib:.2f}\tyes\ttests/validation/{row_id}.mem")
        sys.stdout.flush()
    if a.mem_out:
        with open(os.path.join(a.mem_out, "rows.tsv"), "w") as f:
            f.write("\n".join(tsv) + ("\n" if tsv else ""))
        print("\n".join(tsv), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
