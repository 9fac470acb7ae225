# qserve build. `make` builds build/qserve (CPU always; CUDA objects whenever nvcc is found),
# `make test` runs every suite and prints one summary line, `make SANITIZE=1 test` does the same
# under ASan/UBSan, `make fuzz` runs the libFuzzer targets briefly.
# BUILD=dir puts objects elsewhere so several builds (sanitized, CUDA-less) can coexist.
# `make dev` builds the lab (dev/, dev/README.md) into $(BUILD)-dev: never part of the product build.

BUILD    ?= build
CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation
STD      := -std=c11 -D_GNU_SOURCE
PKGS     := libmicrohttpd libcjson yaml-0.1 libpcre2-8 libcurl libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lunistring
INCLUDES := -Isrc -Icuda
LDLIBS   := $(PKG_LIBS) -lm -lpthread
# MPI (Open MPI) for tensor parallelism across processes (src/parallel); optional: without its
# headers qserve builds and refuses --tensor-parallel-size > 1 by name.
MPI_PKG  := $(shell pkg-config --exists ompi-c 2>/dev/null && echo ompi-c)
ifneq ($(MPI_PKG),)
  PKG_CFLAGS += $(shell pkg-config --cflags ompi-c)
  LDLIBS     += $(shell pkg-config --libs ompi-c)
  DEFS       += -DQS_HAVE_MPI=1
endif

# DEV=1 (what `make dev` sets): the lab's CUDA files (probes) join the library, its tools and GPU
# tests are built, and marlin reads its QSERVE_MARLIN_* measurement knobs (-DQS_DEV_KNOBS).
ifeq ($(DEV),1)
  DEFS += -DQS_DEV_KNOBS
  INCLUDES += -Idev/cuda
endif

ifeq ($(SANITIZE),1)
  override BUILD := $(BUILD)-asan
  CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif

# CUDA: compiled whenever nvcc exists unless NO_CUDA=1.
NVCC ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
ifeq ($(NO_CUDA),1)
  NVCC :=
endif
CUDA_SRC := $(wildcard cuda/*.cu) $(if $(filter 1,$(DEV)),$(wildcard dev/cuda/*.cu))
ifneq ($(NVCC),)
  CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
  # the GPU generations compiled for (scripts/device-bundle.sh builds for the H200's 90a only)
  CUDA_ARCHS ?= 80 89 90a
  NVCC_FLAGS ?= -O3 -std=c++17 -Icuda -Isrc \
    $(foreach a,$(CUDA_ARCHS),-gencode=arch=compute_$(a),code=sm_$(a)) -Xcompiler -fPIC
  # NVCC_EXTRA: flags added to the default ones (dev/scripts/device-variant.sh's measurement builds)
  NVCC_FLAGS += $(NVCC_EXTRA) $(if $(filter 1,$(DEV)),-DQS_DEV_KNOBS -Idev/cuda)
  CUDA_OBJ   := $(CUDA_SRC:%.cu=$(BUILD)/%.o)
  DEFS       += -DQS_HAVE_CUDA=1
  # marlin's Hopper kernels (wgmma, the stream kernel) exist only in builds with sm_90a code; the
  # per-step table's Hopper limits (src/registry/step_plan.c) were measured with them
  ifneq ($(filter 90a,$(CUDA_ARCHS)),)
    DEFS     += -DQS_HAVE_SM90A=1
  endif
  LDLIBS     += -L$(CUDA_HOME)/lib64 -lcudart -ldl -Wl,-rpath,'$$ORIGIN/lib' -Wl,-rpath,$(CUDA_HOME)/lib64
else
  CUDA_OBJ   :=
endif

# The applications stand above the library: each folder in APPS is its own archive
# ($(BUILD)/libqserve-NAME.a) and its main.c, where it has one, is a program's entry. APPS is in
# link order: an app may use the library and the apps after it (APP_USES_NAME says which).
APPS     := eval cli quantize
APP_USES_eval     := cli quantize
APP_USES_cli      := quantize
APP_USES_quantize :=
LIB_SRC  := $(shell find src -name '*.c' $(foreach a,$(APPS),! -path 'src/$(a)/*') | sort)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libqserve.a
app_src   = $(filter-out src/$(1)/main.c,$(sort $(wildcard src/$(1)/*.c)))
app_lib   = $(BUILD)/libqserve-$(1).a
APP_LIBS := $(foreach a,$(APPS),$(call app_lib,$(a)))
# A program links the apps whose headers its source includes, with what they use, in APPS order;
# one that includes none links the library alone, so nothing in the library can lean on an app.
PROGRAM_SRC := $(wildcard tests/unit/test_*.c tests/cuda/test_*.c tools/*.c dev/tools/*.c \
                 dev/tests/cuda/test_*.c)
$(foreach a,$(APPS),$(eval APP_USERS_$(a) := $(shell grep -l '^\#include "$(a)/' $(PROGRAM_SRC) /dev/null)))
apps_of   = $(sort $(foreach a,$(APPS),$(if $(filter $(1),$(APP_USERS_$(a))),$(a) $(APP_USES_$(a)))))
app_libs  = $(foreach a,$(APPS),$(if $(filter $(a),$(call apps_of,$(1))),$(call app_lib,$(a))))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/%)
# the lab's tools (dev/tools) need the CUDA build: they time kernels
DEV_TOOL_SRC := $(if $(and $(filter 1,$(DEV)),$(CUDA_OBJ)),$(sort $(wildcard dev/tools/*.c)))
TOOL_BIN += $(DEV_TOOL_SRC:dev/tools/%.c=$(BUILD)/%)

ALL_CFLAGS = $(STD) $(WARN) $(CFLAGS) $(DEFS) $(INCLUDES) $(PKG_CFLAGS) -MMD -MP

.PHONY: all test fuzz fuzz-build clean demo tests cuda-tests dev
.SECONDARY:
all: $(BUILD)/qserve $(TOOL_BIN) $(BUILD)/qserve-eval

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Include rules: the core (src/core) and the backends (src/cpu, cuda/) stand below everything else,
# so they may include only core/, util/ and their own folder. Each is compiled against an include
# root of its own, $(INCLUDE_ROOTS)/FOLDER, holding links to just those folders (instead of -Isrc,
# which holds them all), so any other include is a build error ("No such file or directory").
# tests/cli/test_include_rules.sh proves it.
INCLUDE_ROOTS := $(BUILD)/include-roots
ALLOWED_core := core util
ALLOWED_cpu  := core util cpu
ALLOWED_cuda := core util
INCLUDE_LINKS := $(INCLUDE_ROOTS)/core/.links $(INCLUDE_ROOTS)/cpu/.links $(INCLUDE_ROOTS)/cuda/.links
$(INCLUDE_LINKS): $(INCLUDE_ROOTS)/%/.links:
	@mkdir -p $(dir $@)
	@for d in $(ALLOWED_$*); do ln -sfn "$$(realpath -m --relative-to=$(dir $@) src/$$d)" $(dir $@)$$d; done
	@touch $@
LOWER_CFLAGS = $(STD) $(WARN) $(CFLAGS) $(DEFS) -I$(INCLUDE_ROOTS)/$(1) $(PKG_CFLAGS) -MMD -MP

$(BUILD)/src/core/%.o: src/core/%.c | $(INCLUDE_ROOTS)/core/.links
	@mkdir -p $(dir $@)
	$(CC) $(call LOWER_CFLAGS,core) -c $< -o $@

$(BUILD)/src/cpu/%.o: src/cpu/%.c | $(INCLUDE_ROOTS)/cpu/.links
	@mkdir -p $(dir $@)
	$(CC) $(call LOWER_CFLAGS,cpu) -c $< -o $@

# cuda/'s own headers are found beside the file that includes them.
$(BUILD)/cuda/%.o: cuda/%.cu | $(INCLUDE_ROOTS)/cuda/.links
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out -Isrc -Icuda -Idev/cuda,$(NVCC_FLAGS)) -I$(INCLUDE_ROOTS)/cuda -MMD -MP -c $< -o $@

$(BUILD)/dev/cuda/%.o: dev/cuda/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ) $(CUDA_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(foreach a,$(APPS),$(eval $(call app_lib,$(a)): $(patsubst %.c,$(BUILD)/%.o,$(call app_src,$(a)))))
$(APP_LIBS):
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/qserve: $(BUILD)/src/cli/main.o $(call app_lib,cli) $(call app_lib,quantize) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(if $(CUDA_OBJ),-lstdc++)

$(BUILD)/qserve-eval: $(BUILD)/src/eval/main.o $(APP_LIBS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(if $(CUDA_OBJ),-lstdc++)

$(BUILD)/%: $(BUILD)/tools/%.o $(APP_LIBS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(call app_libs,tools/$*.c) $(LIB) $(LDLIBS) $(if $(CUDA_OBJ),-lstdc++)

$(BUILD)/%: $(BUILD)/dev/tools/%.o $(APP_LIBS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(call app_libs,dev/tools/$*.c) $(LIB) $(LDLIBS) -lstdc++

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(APP_LIBS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(call app_libs,tests/unit/$*.c) $(LIB) $(LDLIBS) -lcmocka $(if $(CUDA_OBJ),-lstdc++)

tests: all $(TEST_BIN)

# GPU tests (tests/cuda/test_*.c): built here, run on a CUDA machine by scripts/gpu-check.sh.
CUDA_TEST_SRC := $(sort $(wildcard tests/cuda/test_*.c))
CUDA_TEST_BIN := $(CUDA_TEST_SRC:tests/cuda/%.c=$(BUILD)/cuda-tests/%)
DEV_CUDA_TEST_SRC := $(if $(filter 1,$(DEV)),$(sort $(wildcard dev/tests/cuda/test_*.c)))
CUDA_TEST_BIN += $(DEV_CUDA_TEST_SRC:dev/tests/cuda/%.c=$(BUILD)/cuda-tests/%)
cuda-tests: $(CUDA_TEST_BIN)
$(BUILD)/cuda-tests/%: tests/cuda/%.c $(APP_LIBS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(call app_libs,$<) $(LIB) $(LDLIBS) -lstdc++
$(BUILD)/cuda-tests/%: dev/tests/cuda/%.c $(APP_LIBS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/cuda $(LDFLAGS) -o $@ $< $(call app_libs,$<) $(LIB) $(LDLIBS) -lstdc++

# The lab: the whole build again in $(BUILD)-dev with DEV=1 (its GPU tests too where CUDA is built).
dev:
	$(MAKE) DEV=1 BUILD=$(BUILD)-dev all $(if $(NVCC),cuda-tests)

test: tests
	@BUILD=$(BUILD) scripts/run-tests.sh

# libFuzzer targets (clang): tests/fuzz/fuzz_*.c, each linked against the library objects, which
# are compiled once for all targets (in parallel under -j) with fuzzer instrumentation. `make fuzz`
# builds them and runs each for FUZZ_SECONDS (default 20); a crash fails the run with its log.
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz-obj/%.o)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_CFLAGS = $(STD) -g -O1 $(INCLUDES) $(PKG_CFLAGS) -DQS_FUZZING -DQS_SOURCE_DIR='"$(CURDIR)"'

$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(FUZZ_OBJ) -o $@ $(PKG_LIBS) -lm -lpthread

fuzz-build: $(FUZZ_BIN)
fuzz: fuzz-build
	@set -e; for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  mkdir -p $(BUILD)/fuzz/$$n-corpus; \
	  $(BUILD)/fuzz/$$n -max_total_time=$${FUZZ_SECONDS:-20} $(BUILD)/fuzz/$$n-corpus tests/fuzz/corpus/$$n \
	    >$(BUILD)/fuzz/$$n.log 2>&1 || { tail -40 $(BUILD)/fuzz/$$n.log; echo "fuzz: $$n failed"; exit 1; }; \
	  echo "$$n: $$(tail -1 $(BUILD)/fuzz/$$n.log)"; \
	done

demo: all
	scripts/demo.sh

clean:
	rm -rf build build-asan build-dev

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
