# mote - one entry point for building, testing and installing.
#
# Variables (all optional):
#   BUILDDIR=build        where everything goes
#   CROSS_COMPILE=prefix- cross toolchain prefix (aarch64-linux-gnu-)
#   CC, AR                compiler and archiver (default $(CROSS_COMPILE)gcc/ar)
#   CFLAGS, LDFLAGS       your flags; the required ones are kept apart
#   TLS=mbedtls|none      TLS backend (none: only http:// URLs)
#   STATIC=1              link build/mote statically
#   V=1                   show the commands
#   PREFIX=/usr/local DESTDIR=  install location and staging root

BUILDDIR ?= build
B := $(BUILDDIR)
CROSS_COMPILE ?=
ifeq ($(origin CC),default)
CC := $(CROSS_COMPILE)gcc
endif
ifeq ($(origin AR),default)
AR := $(CROSS_COMPILE)ar
endif
NM ?= $(CROSS_COMPILE)nm
SIZE ?= $(CROSS_COMPILE)size
STRIP ?= $(CROSS_COMPILE)strip
TLS ?= mbedtls
STATIC ?= 0
PREFIX ?= /usr/local
CFLAGS ?= -Os -g
LDFLAGS ?=

ifeq ($(V),1)
Q :=
else
Q := @
endif

ifeq ($(filter $(TLS),mbedtls none),)
$(error TLS must be mbedtls or none, not '$(TLS)')
endif

# Flags mote needs whatever the user passes (options are the same for
# every translation unit: never set a MOTE_* macro per file).
# jsmn's options, set once for every translation unit (only src/json.c
# includes jsmn.h). Cross compilers do not search /usr/include, so they get
# a copy of the one header in the build directory.
JSMN_DEFS := -DJSMN_STATIC -DJSMN_STRICT -DJSMN_PARENT_LINKS
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wcast-align -Wundef
REQ_CFLAGS := -std=c11 $(WARN) -Iinclude $(JSMN_DEFS) -ffunction-sections -fdata-sections -MMD -MP
REQ_LDFLAGS := -Wl,--gc-sections
ifeq ($(TLS),mbedtls)
LIBS := -lmbedtls -lmbedx509 -lmbedcrypto -lpthread
else
LIBS := -lpthread
endif
ifeq ($(STATIC),1)
REQ_LDFLAGS += -static
endif

CORE_SRC := $(sort $(wildcard src/*.c))
POSIX_SRC := $(sort $(wildcard port/posix/*.c)) port/tls_$(TLS).c
TPORT_SRC := $(sort $(wildcard port/test/*.c))
CLI_SRC := $(sort $(wildcard examples/cli/*.c examples/common/*.c examples/serve/*.c))
UNIT_SRC := $(sort $(wildcard test/unit/test_*.c))

CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o)
POSIX_OBJ := $(POSIX_SRC:%.c=$(B)/obj/%.o)
LIB_OBJ := $(CORE_OBJ) $(POSIX_OBJ)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)

# Sanitizer build for the tests (make check).
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := -O1 -g $(SAN) -Iport/test
SB := $(B)/asan
SAN_POSIX_SRC := $(sort $(wildcard port/posix/*.c)) port/tls_mbedtls.c
SAN_LIB_OBJ := $(CORE_SRC:%.c=$(SB)/%.o) $(SAN_POSIX_SRC:%.c=$(SB)/%.o) $(TPORT_SRC:%.c=$(SB)/%.o)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(SB)/%)


.PHONY: fuzz-long
.PHONY: test-serve test-cli15 all lib check unit test-symbols test-core-rules test-cli test-client test-agent test-embed test-issue10 test-proc test-fidelity test-core test-turns test-mcp test-install test-tiny tiny fuzz test-fuzz bench deps deps-check help size \
        install uninstall freestanding check-cross demo clean

## all: build build/libmote.a, build/mote and build/embed (the default)
all: $(B)/libmote.a $(B)/mote $(B)/embed

lib: $(B)/libmote.a

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(REQ_CFLAGS) $(CFLAGS) -c $< -o $@

$(B)/libmote.a: $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The portable core alone (no port), for size reports and other ports.
$(B)/libmote_core.a: $(CORE_OBJ)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(B)/mote: $(CLI_OBJ) $(B)/libmote.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(REQ_LDFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libmote.a $(LIBS)

$(B)/embed: $(B)/obj/examples/embed/main.o $(B)/libmote.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(REQ_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

# ---- tests --------------------------------------------------------------

$(SB)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC/SAN  $<")
	$(Q)$(CC) $(REQ_CFLAGS) $(SAN_CFLAGS) -c $< -o $@

$(SB)/test_%: $(SB)/test/unit/test_%.o $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $^ -lcmocka -lmbedtls -lmbedx509 -lmbedcrypto -lpthread

## check: build and run every test: unit (cmocka, ASan+UBSan), integration, fuzz
check: deps-check
	$(Q)$(MAKE) --no-print-directory unit test-symbols test-core-rules test-cli test-install \
	  test-client test-agent test-issue10 test-turns test-embed test-mcp test-fidelity test-core test-proc test-cli15 test-serve test-fuzz
	@echo "make check: all test groups passed"

unit: $(UNIT_BIN)
	$(Q)fail=0; for t in $(UNIT_BIN); do \
	  echo "== $$t"; \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $$t || fail=1; \
	done; exit $$fail

# Every symbol libmote.a defines for the outside starts with mote_.
test-symbols: $(B)/libmote.a
	$(Q)bad=$$($(NM) -g --defined-only $(B)/libmote.a | awk 'NF==3 {print $$3}' | \
	  grep -v '^mote_' || true); \
	if [ -n "$$bad" ]; then echo "test-symbols: not prefixed with mote_:"; echo "$$bad"; exit 1; fi; \
	echo "test-symbols: 1 passed, 0 failed"

# The core allocates nothing and includes no OS header.
test-core-rules:
	$(Q)sh test/check_core_rules.sh src

test-cli: $(B)/mote
	$(Q)sh test/integration/cli_basic.sh $(B)/mote

# The agent (build/mote built with the sanitizers) in pipes and a pty,
# kill -9 and shutdown.
SAN_CLI_OBJ := $(CLI_SRC:%.c=$(SB)/%.o)
$(SB)/mote: $(SAN_CLI_OBJ) $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $(SAN_CLI_OBJ) $(filter-out $(SB)/port/test/%,$(SAN_LIB_OBJ)) \
	  -lmbedtls -lmbedx509 -lmbedcrypto -lpthread

test-agent: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_agent.py $(SB)

# examples/embed (an embedder's agent with a custom tool), sanitizers on.
$(SB)/embed: $(SB)/examples/embed/main.o $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $< $(filter-out $(SB)/port/test/%,$(SAN_LIB_OBJ)) \
	  -lmbedtls -lmbedx509 -lmbedcrypto -lpthread

# How turns end, compaction, the system prompt (issue 13's agent side).
test-turns: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_turns.py $(SB)

test-embed: $(SB)/embed
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_embed.py $(SB)

# Regression tests of the defects listed in issue 10 (not in `check` yet:
# they join it once they all pass).
# Issue 11: the core's promises under hostile input (real binary).
test-core: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_core.py $(SB)

# Issue 13: the providers' APIs spoken exactly (real binary, test server).
test-fidelity: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_fidelity.py $(SB)

# Issue 16: no tool or MCP process outlives mote, whatever a SIGKILL reaches.
test-proc: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_proc.py $(SB)

# Issue 15: the CLI people reach for (tools, editing, paste, approval,
# conversations, proxies, localhost).
test-cli15: $(SB)/mote all
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_cli15.py $(SB)

# ---- issue 14: mote serve (the agent as a service) ----
# The API on a Unix socket and loopback TCP, event streams, approval through
# the API, kill -9 with conversations in every state and the restart,
# SIGTERM drains, 200 connections at once, slow and malformed requests.
test-serve: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_serve.py $(SB)
# ---- end of issue 14's block ----

test-issue10: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_issue10.py $(SB)

# make install into a staging root, then build the embedding example and
# the README's example against what was installed, through pkg-config.
test-install: all
	$(Q)rm -rf $(B)/stage && $(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(B))/stage
	$(Q)awk '/^```c$$/{f=1;next} /^```$$/{f=0} f' README.md > $(B)/readme_example.c
	$(Q)for src in examples/embed/main.c $(B)/readme_example.c; do \
	  PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	    $(CC) -std=c11 -o $(B)/stage/example $$src $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	    PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs --static mote) \
	    || { echo "test-install: $$src does not build against the installed library"; exit 1; }; \
	done
	$(Q)PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	  $(CC) -std=c11 -o $(B)/stage/embed examples/embed/main.c $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	  PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs --static mote)
	$(Q)python3 test/integration/test_embed.py $(B)/stage >$(B)/stage/embed.log 2>&1 || \
	  { cat $(B)/stage/embed.log; echo "test-install: the embed example built on the installed library failed"; exit 1; }
	@# The library's link flags without --static (only a static library is
	@# installed), and a program built with other MOTE_* values than the
	@# library is refused with a message, not run into memory corruption.
	$(Q)PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	  $(CC) -std=c11 -DMOTE_MAX_JOBS=4 -o $(B)/stage/embed4 examples/embed/main.c $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	  PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs mote) \
	  || { echo "test-install: pkg-config --libs mote (without --static) does not link"; exit 1; }
	$(Q)out=$$(cd $(B)/stage && ./embed4 2>&1); rc=$$?; \
	  if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "different MOTE_\* values"; then \
	    echo "test-install: a program built with MOTE_MAX_JOBS=4 on a default library: exit $$rc: $$out"; exit 1; fi
	@echo "test-install: 5 passed, 0 failed"

# MCP servers: a fake one for faults, the real npm ones, zero orphans.
test-mcp: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 python3 test/integration/test_mcp.py $(SB)

$(SB)/llm_probe: $(SB)/test/integration/llm_probe.o $(SAN_LIB_OBJ)
	$(Q)$(CC) $(SAN) -o $@ $^ -lmbedtls -lmbedx509 -lmbedcrypto -lpthread

# The model client against the local test server (TCP and TLS on loopback),
# with a TLS=none build beside it.
test-client: $(SB)/llm_probe $(B)/mote
	$(Q)$(MAKE) --no-print-directory TLS=none BUILDDIR=$(B)/none $(B)/none/mote
	$(Q)python3 test/integration/test_client.py $(B)

## deps: install the Debian packages the build and the tests need
deps:
	$(Q)sh scripts/deps.sh install

deps-check:
	$(Q)sh scripts/deps.sh check || sh scripts/deps.sh install

## fuzz: build the libFuzzer targets (clang) into BUILDDIR/fuzz
FZ := $(B)/fuzz
FUZZ_SRC := $(sort $(wildcard test/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:test/fuzz/%.c=$(FZ)/%)
FUZZ_SECONDS ?= 8
fuzz: $(FUZZ_BIN)

# Targets of the CLI's parsers take its source file too.
$(FZ)/fuzz_opts: FUZZ_EXTRA := examples/cli/opts.c examples/cli/render.c
$(FZ)/fuzz_mcpconf: FUZZ_EXTRA := examples/cli/mcpconf.c
$(FZ)/fuzz_opts: examples/cli/opts.c examples/cli/render.c
$(FZ)/fuzz_mcpconf: examples/cli/mcpconf.c
$(FZ)/fuzz_%: test/fuzz/fuzz_%.c $(CORE_SRC) $(TPORT_SRC)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude $(JSMN_DEFS) \
	  -o $@ $< $(FUZZ_EXTRA) $(CORE_SRC) $(TPORT_SRC)

# Each fuzzer runs for a short, bounded time (FUZZ_SECONDS) from an empty
# corpus plus the shared fixtures when they are there.
test-fuzz: $(FUZZ_BIN)
	$(Q)for f in $(FUZZ_BIN); do \
	  mkdir -p $(FZ)/corpus-$$(basename $$f); \
	  seeds=""; [ -d ../shared/fixtures ] && seeds=../shared/fixtures; \
	  [ -d test/fuzz/seeds/$$(basename $$f) ] && seeds="$$seeds test/fuzz/seeds/$$(basename $$f)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=70000 -rss_limit_mb=1024 \
	    $(FZ)/corpus-$$(basename $$f) $$seeds >$(FZ)/$$(basename $$f).log 2>&1 || \
	    { tail -n 40 $(FZ)/$$(basename $$f).log; exit 1; }; \
	  echo "$$(basename $$f): $$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' $(FZ)/$$(basename $$f).log)s," \
	    "$$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' $(FZ)/$$(basename $$f).log | tail -n 1)"; \
	done; echo "fuzz: $(words $(FUZZ_BIN)) passed, 0 failed"

## fuzz-long: each fuzz target for FUZZ_SECONDS (default 600), with its
## executions and coverage (make fuzz-long FUZZ_SECONDS=60 for a shorter run)
fuzz-long: $(FUZZ_BIN)
	$(Q)$(MAKE) --no-print-directory test-fuzz FUZZ_SECONDS=$(if $(filter command line,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),600)

## bench: parse throughput and instruction counts, TLS handshake memory
BB := $(B)/bench
bench: $(B)/libmote.a
	@mkdir -p $(BB)
	$(Q)$(CC) -std=c11 -O2 -Iinclude $(JSMN_DEFS) -o $(BB)/bench_parse test/bench/bench_parse.c \
	  $(CORE_SRC)
	$(Q)$(CC) -std=c11 -Os -Iinclude $(JSMN_DEFS) -o $(BB)/llm_probe test/integration/llm_probe.c \
	  $(B)/libmote.a $(LIBS)
	$(Q)sh test/bench/run.sh $(BB)

## freestanding: compile src/ for Cortex-M4 and check it needs only mem*/str*
FB := $(B)/freestanding
FS_CC := arm-none-eabi-gcc
FS_FLAGS := -mcpu=cortex-m4 -mthumb -ffreestanding -Os -std=c11 $(WARN) -Iinclude $(JSMN_DEFS) \
            -I$(FB)/jsmn \
            -ffunction-sections -fdata-sections
freestanding: deps-check
	@mkdir -p $(FB)/obj $(FB)/jsmn
	$(Q)cp /usr/include/jsmn.h $(FB)/jsmn/
	$(Q)for f in $(CORE_SRC); do \
	  $(FS_CC) $(FS_FLAGS) -c $$f -o $(FB)/obj/$$(basename $$f .c).o || exit 1; done
	$(Q)arm-none-eabi-ld -r -o $(FB)/core.o $(FB)/obj/*.o
	$(Q)undef=$$(arm-none-eabi-nm -u $(FB)/core.o | awk '{print $$2}' | \
	  grep -Ev '^(mem|str)[a-z]*$$' || true); \
	if [ -n "$$undef" ]; then echo "freestanding: src/ needs symbols beyond mem*/str*:"; \
	  echo "$$undef"; exit 1; fi
	$(Q)arm-none-eabi-size $(FB)/core.o
	@echo "freestanding: src/ builds for Cortex-M4; undefined symbols only mem*/str*"

## check-cross: build the unit tests static for aarch64 and run them in qemu
XB := $(B)/cross-aarch64
X := aarch64-linux-gnu-
XCFLAGS := -O1 -g -static -Iport/test -I$(XB)/cmocka/include -I$(XB)/jsmn
check-cross: deps-check
	$(Q)sh scripts/cmocka_cross.sh $(X)gcc $(XB)/cmocka
	$(Q)mkdir -p $(XB)/jsmn && cp /usr/include/jsmn.h $(XB)/jsmn/
	$(Q)fail=0; for t in $(UNIT_SRC); do \
	  n=$$(basename $$t .c); \
	  $(X)gcc $(REQ_CFLAGS) $(XCFLAGS) -o $(XB)/$$n $$t $(CORE_SRC) $(SAN_POSIX_SRC) $(TPORT_SRC) \
	    $(XB)/cmocka/libcmocka.a -lmbedtls -lmbedx509 -lmbedcrypto -lpthread || exit 1; \
	  echo "== $(XB)/$$n (qemu-aarch64-static)"; \
	  qemu-aarch64-static $(XB)/$$n || fail=1; \
	done; exit $$fail
	$(Q)$(MAKE) --no-print-directory CROSS_COMPILE=$(X) STATIC=1 BUILDDIR=$(XB)/build \
	  $(XB)/build/mote 2>&1 | grep -v "getaddrinfo' in statically linked" || true
	$(Q)sh test/integration/smoke.sh $(XB)/build/mote qemu-aarch64-static

## tiny: the smallest static mote (musl, minimal mbedTLS from Debian's source)
tiny: deps-check
	$(Q)sh scripts/tiny.sh $(B)

# The tiny build runs a tool round over TLS against the local test server.
test-tiny: tiny
	$(Q)sh test/integration/smoke.sh $(B)/tiny/mote

## size: text/data/bss of the core, the library and build/mote
size: $(B)/libmote_core.a $(B)/libmote.a $(B)/mote
	@echo "core (src/, default configuration):"
	$(Q)$(SIZE) -t $(B)/libmote_core.a | tail -n 1
	@echo "library (core + posix port):"
	$(Q)$(SIZE) -t $(B)/libmote.a | tail -n 1
	@echo "build/mote:"
	$(Q)$(SIZE) $(B)/mote | tail -n 1
	$(Q)sh scripts/sizeof.sh "$(CC)" $(B)

## demo: run mote end to end on this machine (no network, no API key)
demo: deps-check all
	$(Q)sh scripts/demo.sh $(B)

## install: install the library, headers, mote and mote.pc under DESTDIR/PREFIX
install: all
	$(Q)install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/mote \
	  $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	$(Q)install -m 0644 $(B)/libmote.a $(DESTDIR)$(PREFIX)/lib/
	$(Q)install -m 0644 include/mote/*.h $(DESTDIR)$(PREFIX)/include/mote/
	$(Q)install -m 0755 $(B)/mote $(DESTDIR)$(PREFIX)/bin/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBS@|$(LIBS)|' \
	  -e 's|@CONFIG_DEFS@|$(foreach d,$(filter -DMOTE_%,$(CFLAGS)), $(d))|' -e 's|@VERSION@|$(shell sed -n \
	  's/^#define MOTE_VERSION_STRING "\(.*\)"/\1/p' include/mote/mote.h)|g' \
	  mote.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/mote.pc

uninstall:
	$(Q)rm -f $(DESTDIR)$(PREFIX)/lib/libmote.a $(DESTDIR)$(PREFIX)/bin/mote \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/mote.pc
	$(Q)rm -rf $(DESTDIR)$(PREFIX)/include/mote

## clean: remove BUILDDIR
clean:
	$(Q)rm -rf $(B)

## help: list the targets
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

.SECONDARY:

-include $(shell find $(B)/obj $(B)/asan -name '*.d' -type f 2>/dev/null)
