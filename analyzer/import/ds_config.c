/* SPDX-License-Identifier: MIT */
/*
 * ds_config.c - a DeepSpeed JSON config into train-block settings.
 */
#include "analyzer/import/import_impl.h"

#include "analyzer/import/map_rows.h"

static const struct map_row ds_rows[] = {
	C("train_micro_batch_size_per_gpu", "micro_batch"),
	C("gradient_accumulation_steps", "grad_accum"),
	NOTE("train_batch_size", "micro_batch x grad_accum x dp; memc derives it"),
	E("zero_optimization.stage", "zero", "0=0|1=1|2=2|3=3"),
	E("zero_optimization.offload_optimizer.device", "offload.optimizer", "cpu=cpu|nvme=nvme|none=none"),
	E("zero_optimization.offload_param.device", "offload.params", "cpu=cpu|nvme=nvme|none=none"),
	C("zero_optimization.reduce_bucket_size", "deepspeed.reduce_bucket_size"),
	C("zero_optimization.allgather_bucket_size", "deepspeed.allgather_bucket_size"),
	C("zero_optimization.stage3_prefetch_bucket_size", "deepspeed.prefetch_bucket_size"),
	B("zero_optimization.overlap_comm", "deepspeed.overlap_comm"),
	T("bf16.enabled", "precision", "bf16_mixed"),
	T("fp16.enabled", "precision", "fp16_mixed"),
	E("optimizer.type", "optimizer", "AdamW=adamw|Adam=adam|Lion=lion|Adafactor=adafactor|SGD=sgd"),
	MUST("activation_checkpointing.partition_activations", "false"),
	MUST("activation_checkpointing.cpu_checkpointing", "false"),
	IGN("activation_checkpointing.*"),
	IGN("optimizer.params.*"), IGN("scheduler.*"), IGN("gradient_clipping"),
	IGN("steps_per_print"), IGN("wall_clock_breakdown"), IGN("zero_allow_untested_optimizer"),
	IGN("zero_force_ds_cpu_optimizer"), IGN("prescale_gradients"),
	IGN("gradient_predivide_factor"), IGN("communication_data_type"), IGN("seed"),
	IGN("zero_optimization.contiguous_gradients"), IGN("zero_optimization.sub_group_size"),
	IGN("zero_optimization.stage3_max_live_parameters"),
	IGN("zero_optimization.stage3_max_reuse_distance"),
	IGN("zero_optimization.stage3_param_persistence_threshold"),
	IGN("zero_optimization.stage3_gather_16bit_weights_on_model_save"),
	IGN("zero_optimization.stage3_gather_fp16_weights_on_model_save"),
	IGN("zero_optimization.reduce_scatter"), IGN("zero_optimization.allgather_partitions"),
	IGN("zero_optimization.round_robin_gradients"), IGN("zero_optimization.load_from_fp32_weights"),
	IGN("zero_optimization.offload_optimizer.pin_memory"),
	IGN("zero_optimization.offload_optimizer.buffer_count"),
	IGN("zero_optimization.offload_optimizer.fast_init"),
	IGN("zero_optimization.offload_optimizer.nvme_path"),
	IGN("zero_optimization.offload_param.pin_memory"),
	IGN("zero_optimization.offload_param.buffer_count"),
	IGN("zero_optimization.offload_param.buffer_size"),
	IGN("zero_optimization.offload_param.max_in_cpu"),
	IGN("zero_optimization.offload_param.nvme_path"),
	IGN("fp16.loss_scale"), IGN("fp16.initial_scale_power"), IGN("fp16.loss_scale_window"),
	IGN("fp16.hysteresis"), IGN("fp16.min_loss_scale"), IGN("fp16.auto_cast"),
	IGN("fp16.consecutive_hysteresis"), IGN("flops_profiler.*"), IGN("tensorboard.*"),
	IGN("wandb.*"), IGN("csv_monitor.*"), IGN("comms_logger.*"), IGN("monitor_config.*"),
	{ NULL, NULL, MAP_IGNORE, NULL }
};

bool ds_import(struct cfg *c, struct imp_out *o)
{
	return map_apply(c, ds_rows, o);
}
