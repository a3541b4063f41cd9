# phi-1.5's config.json (microsoft/phi-1_5: hidden 2048, 32 heads, 24
# layers, partial_rotary_factor 0.5, max_position_embeddings 2048) imported,
# then fine-tuned with and without rope_cache = fp32. transformers <= 4.39
# PhiAttention._init_rope builds PhiRotaryEmbedding(int(partial_rotary_factor
# x head_dim), max_position_embeddings): 0.5 x 64 = 32 dims, not Phi-2's 0.4
# (the template's default, which the import used to keep). By hand, the
# caches' bytes: 24 layers x 2 (cos, sin) x 2048 x 32 x 4 B = 12,582,912 B
# more weights in `rope32` than in `plain`.
$MEMC import -o "$SCRATCH/phi15.mem" tests/hfstep/phi-1_5-config.json || exit 1
grep 'rotary_factor' "$SCRATCH/phi15.mem"
cat >>"$SCRATCH/phi15.mem" <<'JOB'
import "gpus/nvidia"
import "optimizers"
import "precision"

train plain {
  model       = hf_phi_1_5_config
  cluster     = 1 x A100_80GB
  precision   = bf16_true
  optimizer   = adamw
  finetune    = lora(r = 8, targets = [q_proj, v_proj])
  micro_batch = 1
  seq_len     = 512
}

train rope32 : plain {
  rope_cache = fp32
}
JOB
$MEMC report --format json "$SCRATCH/phi15.mem" |
	jq -r '.files[0].jobs[] | "\(.name): weights \(.rank_classes[0].components.weights) B"'
