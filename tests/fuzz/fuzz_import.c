/* SPDX-License-Identifier: MIT */
/*
 * fuzz_import.c - libFuzzer harness: the readers of `memc import` and of
 * `memc compare`'s snapshot, in process, on arbitrary bytes.
 *
 * Built and run by tests/fuzz/fuzz.mk (`make fuzz-import`, and the replay
 * in `make check-fuzz`). The first byte picks what the rest is read as,
 * by the name import_text() gives it (the name picks the reader, as on the
 * command line): a DeepSpeed or Hugging Face JSON, a YAML (HF
 * TrainingArguments, accelerate, torchtune, LitGPT), a torchtitan TOML, a
 * command line (Megatron-LM's, or fsdp_qlora's train.py when it names one
 * of its flags), or a torch.cuda.memory._snapshot() JSON replayed for one
 * device. Each input is one whole run with its own arena; the text and
 * the diagnostics go to /dev/null, so the printer is fuzzed too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/cmd/compare_impl.h"
#include "analyzer/import/import_cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Opened once; a static is the only way to reach it from the fixed
 * signature of LLVMFuzzerTestOneInput(). */
static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sink = fopen("/dev/null", "w");
	if (!sink) {
		perror("fuzz_import: /dev/null");
		abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "fuzz.json", "fuzz.yaml", "fuzz.toml", "fuzz.args" };
	struct snap_measure m;
	struct snap_error err = { 0 };

	if (size < 1)
		return 0;
	unsigned mode = data[0] % 6;
	const char *text = (const char *)data + 1;

	if (mode < 4)
		(void)import_text(names[mode], text, size - 1, sink, sink);
	else
		(void)snap_measure_text(text, size - 1, mode == 4 ? -1 : 0, &m, &err);
	return 0;
}
