# --mtp-num-layers beside the model's config.json: HF's DeepseekV3ForCausalLM
# builds no MTP layer (num_nextn_predict_layers is read by no HF class), so
# the Megatron flag is the declared model's mtp_num_layers; the import used
# to leave it a comment, and memc counted a DeepSeek-V3 without its MTP
# layer. By hand: the model is stdlib deepseek_v3_mtp's, 671,026,419,200 +
# 11,610,068,224 (one MTP depth, models/deepseek.mem) = 682,636,487,424
# params. A template without MTP layers (Llama) cannot hold them:
# import-unused-key at the flag.
$MEMC import -o "$SCRATCH/ds.mem" tests/config-import/deepseek-v3-bf16/config.json \
	tests/config-import/megatron-mtp-model.args || exit 1
grep -n 'mtp_num_layers = ' "$SCRATCH/ds.mem"
sed '/^train job {/,$d' "$SCRATCH/ds.mem" >"$SCRATCH/model.mem"	# the model alone: the job lacks a cluster
$MEMC list --format json "$SCRATCH/model.mem" |
	sed -n 's/.*"name": "\(hf_deepseek_v3_bf16\)", "params_total": \([0-9]*\).*/\1 \2/p'
$MEMC list --format json stdlib/models/deepseek.mem |
	sed -n 's/.*"name": "\(deepseek_v3_mtp\)", "params_total": \([0-9]*\).*/\1 \2/p'
$MEMC import tests/config-import/llama-3.1-8b/config.json tests/config-import/bad/megatron-mtp-llama.args
echo "rc=$?"
