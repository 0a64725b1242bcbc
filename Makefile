# mote - one entry point for building, testing and installing.
#
# Variables (all optional):
#   BUILDDIR=build        where everything goes
#   CROSS_COMPILE=prefix- cross toolchain prefix (aarch64-linux-gnu-)
#   CC, AR                compiler and archiver (default $(CROSS_COMPILE)gcc/ar)
#   CFLAGS, LDFLAGS       your flags; the required ones are kept apart
#   TLS=mbedtls|none      TLS backend (none: only http:// URLs)
#   MBEDTLS=system|3.6    mbedTLS: the system's (Debian 12: 2.28), or 3.6 LTS
#                         (TLS 1.3) built from Debian 13's source package
#                         with Debian's own configuration (BUILDDIR then
#                         defaults to build/mb36)
#   STATIC=1              link build/mote statically
#   V=1                   show the commands
#   PREFIX=/usr/local DESTDIR=  install location and staging root
#   CA_BUNDLE=file.pem    build these trusted roots into the binary (devices
#                         without a trust store; mote_tls.h)
#   SERVE=0               the CLI without mote serve (make tiny's default)
#   PAGE=0                mote serve without its page (GET /); PAGE follows SERVE
#   WERROR=1              warnings are errors. Off by default, so a newer
#                         compiler's new warning never stops someone building
#                         the library; on for the project's own checks (make
#                         check, check-small, check-mcu, check-cross,
#                         freestanding) and for everything .ci/run builds

MBEDTLS ?= system
ifeq ($(filter $(MBEDTLS),system 3.6),)
$(error MBEDTLS must be system or 3.6, not '$(MBEDTLS)')
endif
ifeq ($(MBEDTLS),3.6)
BUILDDIR ?= build/mb36
endif
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
# The tests' Python: Debian's (the one `make deps` installs python3-selenium
# and the like for) where it is. A python3 met earlier in PATH (a pyenv
# shim) starts each of the check's hundreds of Python processes 4-14 times
# slower; PYTHON=python3 takes PATH's. Scripts get it from the environment.
PYTHON ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)
export PYTHON
# A configuration header (MOTE_CONFIG_FILE) may come with its quotes as
# the shell leaves them ('-DMOTE_CONFIG_FILE="file.h"'), escaped
# (\"file.h\") or bare: the compiler gets it as one string literal
# whichever it is.
CONFIG_FILE := $(subst ',,$(subst ",,$(subst \",,$(patsubst -DMOTE_CONFIG_FILE=%,%,$(filter -DMOTE_CONFIG_FILE=%,$(CFLAGS))))))
ifneq ($(CONFIG_FILE),)
override CFLAGS := $(filter-out -DMOTE_CONFIG_FILE=%,$(CFLAGS)) -DMOTE_CONFIG_FILE=\"$(CONFIG_FILE)\"
endif

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
# (recursive: WERROR may be set for a target, see the checks below)
WERROR ?= 0
WARN = -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -Wshadow -Wstrict-prototypes \
       -Wmissing-prototypes -Wpointer-arith -Wcast-align -Wundef
REQ_CFLAGS = -std=c11 $(WARN) -Iinclude $(JSMN_DEFS) -ffunction-sections -fdata-sections -MMD -MP
REQ_LDFLAGS := -Wl,--gc-sections
# mbedTLS's libraries (and headers, for MBEDTLS=3.6: its tree, built by
# scripts/mbedtls.sh before anything that includes them).
ifeq ($(MBEDTLS),3.6)
MBEDTLS_DIR := $(B)/mbedtls-3.6
MBEDTLS_LIBS := -L$(MBEDTLS_DIR)/library -lmbedtls -lmbedx509 -lmbedcrypto
REQ_CFLAGS += -I$(MBEDTLS_DIR)/include
MBEDTLS_DEP := $(MBEDTLS_DIR)/library/libmbedtls.a
else
MBEDTLS_LIBS := -lmbedtls -lmbedx509 -lmbedcrypto
MBEDTLS_DEP :=
endif
ifeq ($(TLS),mbedtls)
LIBS := $(MBEDTLS_LIBS) -lpthread
else
LIBS := -lpthread
endif
ifeq ($(STATIC),1)
REQ_LDFLAGS += -static
endif
# Roots built in (CA_BUNDLE): the bundle as DER in .rodata.
CA_BUNDLE ?=
ifneq ($(CA_BUNDLE),)
REQ_CFLAGS += -DMOTE_TLS_BUILTIN_ROOTS
ROOTS_OBJ := $(B)/obj/ca_roots.o
endif

CORE_SRC := $(sort $(wildcard src/*.c))
POSIX_SRC := $(sort $(wildcard port/posix/*.c)) port/tls_$(TLS).c $(if $(filter mbedtls,$(TLS)),port/tls_roots.c port/tls_sessions.c port/tls_sign.c)
TPORT_SRC := $(sort $(wildcard port/test/*.c))
CLI_SRC := $(sort $(wildcard examples/cli/*.c examples/common/*.c examples/serve/*.c))
# SERVE=0: the CLI without `mote serve` (about 40 KB less).
SERVE ?= 1
ifeq ($(SERVE),0)
CLI_SRC := $(filter-out examples/serve/%,$(CLI_SRC)) examples/tiny/serve_none.c
endif
UNIT_SRC := $(sort $(wildcard test/unit/test_*.c))

CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o)
POSIX_OBJ := $(POSIX_SRC:%.c=$(B)/obj/%.o)
LIB_OBJ := $(CORE_OBJ) $(POSIX_OBJ) $(ROOTS_OBJ)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)

# The configuration given in CFLAGS (-DMOTE_*, MOTE_CONFIG_FILE) holds for
# every build of the tree, the sanitizer one too.
CONFIG_CFLAGS := $(filter -DMOTE_%,$(CFLAGS))

# Sanitizer build for the tests (make check). -g1: the line tables a
# report's stack needs, without the types and variables (its compile
# takes 13% less CPU than -g's).
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := -O1 -g1 $(SAN) -Iport/test
SB := $(B)/asan
# LeakSanitizer's check at each exit of the ASan mote reads its 6.8 MB of
# static tables: about 85 ms of CPU here (page faults cost ~50 us), 26% of
# a group's CPU (test-cli15: 22.3 s with it, 16.5 s without). The product
# allocates only inside mbedTLS (src/ allocates nothing: test-core-rules),
# so the groups that run TLS or the CLI's file handling keep it (unit,
# agent, turns, errors, embed, tls, cli15, tools15, approval, mqtt,
# mqtt-serve, fleet; check-small's agent); the others run without it.
LSAN_OFF := ASAN_OPTIONS=detect_leaks=0
SAN_POSIX_SRC := $(sort $(wildcard port/posix/*.c)) port/tls_mbedtls.c port/tls_roots.c port/tls_sessions.c port/tls_sign.c
SAN_LIB_OBJ := $(CORE_SRC:%.c=$(SB)/%.o) $(SAN_POSIX_SRC:%.c=$(SB)/%.o) $(TPORT_SRC:%.c=$(SB)/%.o)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(SB)/%)


.PHONY: fuzz-long bench-wire
.PHONY: test-errors test-docs doc-sizes test-approval test-service test-unit test-arch test-api-rules check-small check-mcu test-tls test-serve test-mqtt test-cli15 test-tools15 all lib check unit test-symbols test-core-rules test-cli test-client test-agent test-embed test-issue10 test-proc test-fidelity test-core test-turns test-mcp test-install test-tiny tiny fuzz test-fuzz bench deps deps-check help size \
        install install-lib uninstall freestanding check-cross demo clean

# build/embed-loop (examples/embed/loop.c) runs the embed example inside
# libev's loop: built when the compiler finds <ev.h> (make deps installs
# libev-dev; a cross build without it leaves it out).
HAVE_LIBEV := $(shell printf '\043include <ev.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
EMBED_LOOP := $(if $(HAVE_LIBEV),$(B)/embed-loop)

## all: build build/libmote.a, build/mote, build/embed and build/embed-loop (the default)
all: $(B)/libmote.a $(B)/mote $(B)/embed $(EMBED_LOOP)

lib: $(B)/libmote.a

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(REQ_CFLAGS) $(CFLAGS) -c $< -o $@

$(B)/ca_roots.der: $(CA_BUNDLE) scripts/roots.sh
	@mkdir -p $(@D)
	$(Q)sh scripts/roots.sh $(CA_BUNDLE) $@

$(B)/obj/ca_roots.o: $(B)/ca_roots.der
	@mkdir -p $(@D)
	$(Q)printf '%s\n' '.section .rodata.mote_tls_builtin_roots,"a"' '.balign 4' \
	  '.globl mote_tls_builtin_roots' 'mote_tls_builtin_roots:' '.incbin "$(abspath $<)"' \
	  '.globl mote_tls_builtin_roots_end' 'mote_tls_builtin_roots_end:' \
	  '.section .note.GNU-stack,"",%progbits' > $(B)/ca_roots.S
	$(Q)$(CC) -c -o $@ $(B)/ca_roots.S

# mbedTLS 3.6 (MBEDTLS=3.6) from Debian 13's source, before what includes it.
ifeq ($(MBEDTLS),3.6)
$(MBEDTLS_DEP): scripts/mbedtls.sh
	$(Q)sh scripts/mbedtls.sh 3.6 $(MBEDTLS_DIR) debian "$(CC)" "$(AR)" "-Os -g -ffunction-sections -fdata-sections"
$(B)/obj/port/tls_mbedtls.o $(B)/obj/port/tls_sessions.o $(B)/obj/port/tls_sign.o \
  $(SB)/port/tls_mbedtls.o $(SB)/port/tls_sessions.o $(SB)/port/tls_sign.o $(SB)/test/unit/test_tls_roots.o: $(MBEDTLS_DEP)
endif

$(B)/libmote.a: $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The portable core alone (no port), for size reports and other ports.
$(B)/libmote_core.a: $(CORE_OBJ)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(B)/mote: $(CLI_OBJ) $(B)/libmote.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(REQ_LDFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libmote.a $(LIBS)

$(B)/embed: $(B)/obj/examples/embed/main.o $(B)/obj/examples/embed/device.o $(B)/libmote.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(REQ_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/embed-loop: $(B)/obj/examples/embed/loop.o $(B)/obj/examples/embed/device.o $(B)/libmote.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(REQ_LDFLAGS) $(LDFLAGS) -o $@ $^ -lev -lm $(LIBS)

# ---- tests --------------------------------------------------------------

$(SB)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC/SAN  $<")
	$(Q)$(CC) $(REQ_CFLAGS) $(SAN_CFLAGS) $(CONFIG_CFLAGS) -c $< -o $@

$(SB)/test_%: $(SB)/test/unit/test_%.o $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $^ -lcmocka $(MBEDTLS_LIBS) -lpthread

# The project's own checks build with warnings as errors.
check check-small check-mcu check-cross freestanding: WERROR = 1

# The test groups of `make check`; a group's block may add itself with
# CHECK_GROUPS += . Groups are independent (each starts its own servers on
# ports the kernel picks and works in its own temporary directories), so
# they run CHECK_JOBS at a time, the longest first, and what they build is
# built once; each group's output is printed whole when it ends. Most of a
# group's time is spent waiting (on its servers, on timeouts it checks, on
# processes it kills), not computing, so more groups than cores run at
# once: three times as many (on 2 cores, fresh clones, a quiet machine:
# 4 at once took 503 s, 5 took 463 s; at cf5a751, with less CPU per
# group, 5 took 454 s, 6 took 410 s and 7 took 433 s).
CHECK_GROUPS := test-client-1 test-client-2 test-fuzz-1 test-fuzz-2 test-serve test-mqtt-serve test-api-rules test-approval \
  test-cli15 test-core test-fidelity test-service test-agent test-mcp test-install test-issue10 \
  test-tools15 test-proc test-errors test-mcp-http test-mqtt test-tls test-turns test-embed \
  unit test-symbols test-core-rules test-docs test-arch test-cli test-unit test-seeds
NPROC := $(shell nproc 2>/dev/null || echo 1)
CHECK_JOBS ?= $(shell echo $$(( $(NPROC) * 3 )))
# The longest groups start first (make starts the goals in this order as
# their builds are ready), so that the last to end are short ones: the
# order of their wall times in a run with MOTE_TEST_TIMES=FILE (each
# test's wall and CPU seconds), the builds of test-install and
# test-openwrt among them.
CHECK_FIRST := test-page test-unattended test-install test-proc test-mcp-http test-mcp \
  test-mcp-oauth-1 test-mcp-oauth-2 \
  test-api-rules test-providers test-fuzz-1 test-fuzz-2 test-openwrt test-cli15 test-client-1 \
  test-tls test-fleet test-agent test-client-2 test-approval test-mcp-server
# (a -j given to make itself is used as it is)
CHECK_J = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(CHECK_JOBS))
# What the groups run is built first, one compiler per core: compilers are
# all CPU, and more of them than cores cost more CPU here, not less time.
# Built among the groups, the last binaries (the fuzzers, the unit tests)
# waited for a group to end to get a job slot, and their runs ended last.
CHECK_BUILD = all $(B)/none/mote $(SB)/mote $(SB)/nopage/mote $(SB)/llm_probe $(SB)/mqtt_probe \
  $(UNIT_BIN) $(FUZZ_BIN)
CHECK_BUILD_J = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

## check: build and run every test: unit (cmocka, ASan+UBSan), integration,
## fuzz; CHECK_JOBS (three times the cores) groups at a time, then the tree
check: deps-check
	$(Q)$(MAKE) --no-print-directory WERROR=1 $(CHECK_BUILD_J) $(CHECK_BUILD)
	$(Q)$(MAKE) --no-print-directory WERROR=1 OPENWRT_BUILD=0 $(CHECK_J) --output-sync=target \
	  $(filter $(CHECK_GROUPS),$(CHECK_FIRST)) $(filter-out $(CHECK_FIRST),$(CHECK_GROUPS))
	$(Q)sh scripts/check_tree.sh --top
	@echo "make check: all test groups passed"

# The repository holds only the product: its top level's entries (what a
# test left there fails), and each fuzz corpus its minimised set.
# (make check checks the corpora as a group, test-seeds, and the top level
# after every group.)
.PHONY: test-tree test-seeds fuzz-min
test-tree: $(FUZZ_BIN)
	$(Q)sh scripts/check_tree.sh $(FZ)
test-seeds: $(FUZZ_BIN)
	$(Q)sh scripts/check_tree.sh --seeds $(FZ)

## fuzz-min: rewrite each fuzz target's seeds (test/fuzz/seeds/) to the
## smallest set that covers what they cover
fuzz-min: $(FUZZ_BIN)
	$(Q)for d in test/fuzz/seeds/*/; do t=$$(basename $$d); rm -rf $(FZ)/min-$$t; mkdir -p $(FZ)/min-$$t; \
	  $(FZ)/$$t -set_cover_merge=1 -use_counters=0 $(FZ)/min-$$t $$d >$(FZ)/min-$$t.log 2>&1 || exit 1; \
	  if [ $$(ls $$d | wc -l) -ne $$(ls $(FZ)/min-$$t | wc -l) ]; then rm -f $$d/* && cp $(FZ)/min-$$t/* $$d; \
	    echo "$$t: $$(ls $$d | wc -l) inputs kept"; fi; done

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

# One job per file: no circle in the call or include graph of src/ and
# port/, no file over 1,200 lines, every file opening with its job
# (read from the library's objects; `$(PYTHON) test/check_arch.py
# $(B)/obj --graph` prints the map).
test-arch: $(B)/libmote.a
	$(Q)$(PYTHON) test/check_arch.py $(B)/obj

# The struct sizes the docs quote (marked <!--size:NAME-->) are what
# scripts/sizeof.sh measures; make doc-sizes rewrites them.
test-docs:
	$(Q)$(PYTHON) scripts/doc_sizes.py $(B)

## doc-sizes: rewrite every size and memory figure of README.md and docs/:
## the structs, and the builds' figures (the tiny and cross builds, the
## Cortex-M4 core, a TLS turn's RSS: made here first; FIGURES=0 skips them)
FIGURES ?= 1
doc-sizes:
	$(Q)if [ "$(FIGURES)" = 1 ]; then export DOC_FIGURES=record; mkdir -p $(B); \
	  { $(MAKE) --no-print-directory freestanding && $(MAKE) --no-print-directory test-tiny && \
	    for x in aarch64-linux-gnu- arm-linux-gnueabihf-; do \
	      $(MAKE) --no-print-directory tiny CROSS_COMPILE=$$x || exit 1; \
	      case $$x in arm*) n=armhf ;; *) n=aarch64 ;; esac; \
	      $(PYTHON) scripts/doc_sizes.py $(B) --figure tiny-$$n $$(wc -c < $(B)/tiny-$$n/mote); \
	    done; } >$(B)/doc-sizes.log 2>&1 || { tail -n 30 $(B)/doc-sizes.log; exit 1; }; fi
	$(Q)$(PYTHON) scripts/doc_sizes.py $(B) --write

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
	  $(MBEDTLS_LIBS) -lpthread

test-agent: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_agent.py $(SB)

# examples/embed (an embedder's agent with a custom tool) on mote's loop
# and inside libev's, sanitizers on.
$(SB)/embed: $(SB)/examples/embed/main.o $(SB)/examples/embed/device.o $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $(filter $(SB)/examples/%,$^) $(filter-out $(SB)/port/test/%,$(SAN_LIB_OBJ)) \
	  $(MBEDTLS_LIBS) -lpthread

$(SB)/embed-loop: $(SB)/examples/embed/loop.o $(SB)/examples/embed/device.o $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $(filter $(SB)/examples/%,$^) $(filter-out $(SB)/port/test/%,$(SAN_LIB_OBJ)) \
	  -lev -lm $(MBEDTLS_LIBS) -lpthread

# How turns end, compaction, the system prompt.
test-turns: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_turns.py $(SB)

# Each cause of a failed request has its name in the error events (real
# faults against the test server; stream-json and mote serve).
test-errors: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_errors.py $(SB)

test-embed: $(SB)/embed $(SB)/embed-loop
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_embed.py $(SB)

# Trust stores (the system bundle, not loaded whole), as strict
# as one root; the default build here, the tiny one in test-tiny.
test-tls: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_tls.py $(SB)/mote

# The core's promises under hostile input (real binary).
test-core: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_core.py $(SB)

# The providers' APIs spoken exactly (real binary, test server).
test-fidelity: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_fidelity.py $(SB)

# The rules the real APIs enforce (the test server refuses what
# they refuse), the bodies mote sends keep them, the SDKs' recorded streams.
test-api-rules: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_api_rules.py $(SB)

# No tool or MCP process outlives mote, whatever a SIGKILL reaches.
test-proc: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_proc.py $(SB)

# The CLI people reach for (tools, editing, paste, approval,
# conversations, proxies, localhost).
test-cli15: $(SB)/mote all
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_cli15.py $(SB)

# What an adversarial test found in the file tools, the
# state directory and the proxy client (ownership, /proc sizes, UTF-8 cuts,
# FIFOs in the state, read-only and hard-linked files, CONNECT answers).
test-tools15: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_tools15.py $(SB)

# ---- mote serve (the agent as a service) ----
# The API on a Unix socket and loopback TCP, event streams, approval through
# the API, kill -9 with conversations in every state and the restart,
# SIGTERM drains, 200 connections at once, slow and malformed requests.
test-serve: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_serve.py $(SB)
# ---- end of mote serve's block ----

# What is approved is exactly what runs: the question shows all of the
# input, strict inputs (duplicate keys, NULs), no symlink or FIFO traps.
test-approval: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_approval.py $(SB)

# ---- the MQTT client ----
# The library's client (a small probe program, sanitizers on) against a
# private mosquitto on a loopback port: QoS 1 both ways, the retained
# status and the last will, broker restarts, messages queued while away,
# mqtts, credentials, an oversize message.
$(SB)/mqtt_probe: $(SB)/test/integration/mqtt_probe.o $(SAN_LIB_OBJ)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $< $(filter-out $(SB)/port/test/%,$(SAN_LIB_OBJ)) \
	  $(MBEDTLS_LIBS) -lpthread

test-mqtt: $(SB)/mqtt_probe
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_mqtt.py $(SB)/mqtt_probe
# ---- end of the MQTT client's block ----

# mote serve as a device service: a slow job never stalls the other
# clients, secrets wait for the kernel's pool, the socket's group, one
# meaning per word in the API.
test-service: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_service.py $(SB)

# The systemd unit: valid, and hardened to an exposure of at most 3.0,
# writes confined and privileges dropped, while the agent reads what an
# administrator reads (every process, /proc's system files, netlink for ip
# and ss, the journal); the key a credential. With the strict drop-in:
# at most 1.5, and none of that.
UNIT_CONFINED = NoNewPrivileges=on ProtectSystem=on PrivateTmp=on ProtectHome=on \
  UserOrDynamicUser=on CapabilityBoundingSet_CAP_SYS_ADMIN=on CapabilityBoundingSet_CAP_NET_ADMIN=on \
  RestrictSUIDSGID=on ProtectKernelTunables=on RestrictAddressFamilies_AF_PACKET=on
test-unit: $(B)/mote
	$(Q)sh scripts/check_unit.sh examples/serve/mote.service $(abspath $(B)/mote) 3.0 \
	  $(UNIT_CONFINED) ProtectProc=off ProcSubset=off RestrictAddressFamilies_AF_NETLINK=off \
	  SupplementaryGroups=off 'line=SupplementaryGroups=systemd-journal' \
	  'line=LoadCredential=api-key:/etc/mote/api-key'
	$(Q)sh scripts/check_unit.sh --dropin examples/serve/mote-strict.conf \
	  examples/serve/mote.service $(abspath $(B)/mote) 1.5 \
	  $(UNIT_CONFINED) ProtectProc=on ProcSubset=on RestrictAddressFamilies_AF_NETLINK=on \
	  SupplementaryGroups=on PrivateUsers=on

# ---- mote serve --mqtt (the front door on a broker) ----
# build/asan/mote against a private mosquitto and the test LLM server:
# requests answered once (kill -9 mid-turn, sent while down, an id sent
# twice, a broker's redelivery), broker restarts, errors, the will, the
# HTTP API while the broker is gone, a flood, approvals, a garbage broker.
.PHONY: test-mqtt-serve
test-mqtt-serve: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_mqtt_serve.py $(SB)
CHECK_GROUPS += test-mqtt-serve

## bench-fleet: 200 `mote serve --mqtt` (small configuration) on one mosquitto:
## every prompt answered once, also across a broker restart; RSS, latency
.PHONY: bench-fleet
bench-fleet: deps-check
	$(Q)$(MAKE) --no-print-directory BUILDDIR=$(B)/small CFLAGS='$(SMALL_CFLAGS)' $(B)/small/mote
	$(Q)$(PYTHON) test/bench/mqtt_fleet_bench.py $(B)/small/mote 200
# ---- end of mote serve --mqtt's block ----


# Regression tests of the agent's defects found in its first review
# (real binary, test server).
test-issue10: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_issue10.py $(SB)

# make install into a staging root, then build the embedding example
# against what was installed, through pkg-config (the README's example and
# docs/EMBEDDING.md's programs: test-embedding).
test-install: all
	$(Q)rm -rf $(B)/stage && $(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(B))/stage
	$(Q)test -x $(B)/stage/usr/bin/mote || { echo "test-install: make install installed no mote"; exit 1; }
	$(Q)PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	  $(CC) -std=c11 -Wall -Wextra -Werror -o $(B)/stage/embed examples/embed/main.c examples/embed/device.c $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	  PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs --static mote)
	$(Q)PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	  $(CC) -std=c11 -o $(B)/stage/embed-loop examples/embed/loop.c examples/embed/device.c $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	  PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs --static mote) -lev -lm
	$(Q)$(PYTHON) test/integration/test_embed.py $(B)/stage >$(B)/stage/embed.log 2>&1 || \
	  { cat $(B)/stage/embed.log; echo "test-install: the embed example built on the installed library failed"; exit 1; }
	@# The library's link flags without --static (only a static library is
	@# installed), and a program built with other MOTE_* values than the
	@# library is refused with a message, not run into memory corruption.
	$(Q)PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	  $(CC) -std=c11 -DMOTE_MAX_JOBS=4 -o $(B)/stage/embed4 examples/embed/main.c examples/embed/device.c $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	  PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs mote) \
	  || { echo "test-install: pkg-config --libs mote (without --static) does not link"; exit 1; }
	$(Q)out=$$(cd $(B)/stage && ./embed4 2>&1); rc=$$?; \
	  if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "different MOTE_\* values"; then \
	    echo "test-install: a program built with MOTE_MAX_JOBS=4 on a default library: exit $$rc: $$out"; exit 1; fi
	@# The same for a limit of the port's own struct (mote_posix.h): refused
	@# by mote_posix_init before the library writes into the smaller struct.
	$(Q)PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig \
	  $(CC) -std=c11 -DMOTE_POSIX_PATH_MAX=64 -o $(B)/stage/embed64 examples/embed/main.c examples/embed/device.c $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/stage \
	  PKG_CONFIG_LIBDIR=$(abspath $(B))/stage/usr/lib/pkgconfig pkg-config --cflags --libs mote)
	$(Q)out=$$(cd $(B)/stage && ./embed64 2>&1); rc=$$?; \
	  if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "different MOTE_\* values"; then \
	    echo "test-install: a program built with MOTE_POSIX_PATH_MAX=64 on a default library: exit $$rc: $$out"; exit 1; fi
	@echo "test-install: 5 passed, 0 failed"

# MCP servers: a fake one for faults, the real npm ones, zero orphans.
test-mcp: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_mcp.py $(SB)

## test-mcp-features: MCP resources (as tools), prompts (/prompt) and
## elicitation: the real server-everything (stdio, Streamable HTTP) and the
## fake server's hostile cases
.PHONY: test-mcp-features
CHECK_GROUPS += test-mcp-features
test-mcp-features: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_mcp_features.py $(SB)

## test-mcp-http: MCP servers over HTTP (Streamable HTTP, HTTP+SSE): a hostile
## server for the faults, the real server-everything in both modes
.PHONY: test-mcp-http
CHECK_GROUPS += test-mcp-http
test-mcp-http: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_mcp_http.py $(SB)

$(SB)/llm_probe: $(SB)/test/integration/llm_probe.o $(SAN_LIB_OBJ)
	$(Q)$(CC) $(SAN) -o $@ $^ $(MBEDTLS_LIBS) -lpthread

# The model client against the local test server (TCP and TLS on loopback),
# with a TLS=none build beside it.
test-client: $(SB)/llm_probe $(B)/mote $(B)/none/mote
	$(Q)$(PYTHON) test/integration/test_client.py $(B)
# make check runs it in two halves side by side
.PHONY: test-client-1 test-client-2
test-client-1 test-client-2: $(SB)/llm_probe $(B)/mote $(B)/none/mote
	$(Q)MOTE_TEST_SHARD=$(subst test-client-,,$@)/2 $(PYTHON) test/integration/test_client.py $(B)

# The TLS=none build of mote: the same objects (TLS=... changes no compile
# flag), with the backend that refuses https:// in place of mbedTLS's.
NONE_OBJ := $(CLI_OBJ) $(CORE_OBJ) $(filter-out $(B)/obj/port/tls_%,$(POSIX_OBJ)) $(B)/obj/port/tls_none.o
$(B)/none/mote: $(NONE_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(REQ_LDFLAGS) $(LDFLAGS) -o $@ $(NONE_OBJ) -lpthread

## deps: install the Debian packages the build and the tests need
deps:
	$(Q)sh scripts/deps.sh install

deps-check:
	$(Q)sh scripts/deps.sh check || sh scripts/deps.sh install

## fuzz: build the libFuzzer targets (clang) into BUILDDIR/fuzz
FZ := $(B)/fuzz
FUZZ_SRC := $(sort $(wildcard test/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:test/fuzz/%.c=$(FZ)/%)
FUZZ_SECONDS ?= 2
fuzz: $(FUZZ_BIN)

# Targets of the CLI's parsers take its source file too.
$(FZ)/fuzz_opts: FUZZ_EXTRA := examples/cli/opts.c
$(FZ)/fuzz_mcpconf: FUZZ_EXTRA := examples/common/mcpconf.c examples/common/readfile.c
$(FZ)/fuzz_roots: FUZZ_EXTRA := port/tls_roots.c
$(FZ)/fuzz_oauth: FUZZ_EXTRA := examples/common/oauth_util.c
$(FZ)/fuzz_oauth: examples/common/oauth_util.c examples/common/oauth_int.h
$(FZ)/fuzz_roots: port/tls_roots.c port/tls_roots.h
$(FZ)/fuzz_opts: examples/cli/opts.c
$(FZ)/fuzz_mcpconf: examples/common/mcpconf.c examples/common/readfile.c
# The MCP targets (stdio, HTTP) share their checks and outcome hash.
$(FZ)/fuzz_mcp $(FZ)/fuzz_mcphttp: FUZZ_EXTRA := test/fuzz/mcp_kit.c
$(FZ)/fuzz_mcp $(FZ)/fuzz_mcphttp: test/fuzz/mcp_kit.c test/fuzz/mcp_kit.h
# The core and the test port are compiled once for every fuzz target
# (instrumented for coverage, sanitizers on) into one archive; each target
# is its own source, the extras it names, and the archive.
FUZZ_CFLAGS := -std=c11 -g1 -O1 -Iinclude $(JSMN_DEFS)
FUZZ_LIB_OBJ := $(CORE_SRC:%.c=$(FZ)/obj/%.o) $(TPORT_SRC:%.c=$(FZ)/obj/%.o)
$(FZ)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC/FUZZ $<")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@

$(FZ)/libfuzzcore.a: $(FUZZ_LIB_OBJ)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(FZ)/fuzz_%: test/fuzz/fuzz_%.c $(FZ)/libfuzzcore.a
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	  -o $@ $< $(FUZZ_EXTRA) $(FZ)/libfuzzcore.a

# Each fuzzer runs for a short, bounded time (FUZZ_SECONDS) from an empty
# corpus plus the shared fixtures when they are there. libFuzzer runs every
# seed first, whatever the time (a regression run); the time bounds the
# mutations after (make fuzz-long is the long run). make check runs the
# targets in two halves (test-fuzz-1, test-fuzz-2), side by side.
FUZZ_RUN = for f in $(1); do \
	  mkdir -p $(FZ)/corpus-$$(basename $$f); \
	  seeds=""; [ -d ../shared/fixtures ] && seeds=../shared/fixtures; \
	  [ -d test/fuzz/seeds/$$(basename $$f) ] && seeds="$$seeds test/fuzz/seeds/$$(basename $$f)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=70000 -rss_limit_mb=1024 -artifact_prefix=$(FZ)/ \
	    $(FZ)/corpus-$$(basename $$f) $$seeds >$(FZ)/$$(basename $$f).log 2>&1 || \
	    { tail -n 40 $(FZ)/$$(basename $$f).log; exit 1; }; \
	  echo "$$(basename $$f): $$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' $(FZ)/$$(basename $$f).log)s," \
	    "$$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' $(FZ)/$$(basename $$f).log | tail -n 1)"; \
	done; echo "fuzz$(2): $(words $(1)) passed, 0 failed"
FUZZ_HALF := $(shell expr \( $(words $(FUZZ_BIN)) + 1 \) / 2)
.PHONY: test-fuzz-1 test-fuzz-2
test-fuzz: $(FUZZ_BIN)
	$(Q)$(call FUZZ_RUN,$(FUZZ_BIN))
test-fuzz-1: $(FUZZ_BIN)
	$(Q)$(call FUZZ_RUN,$(wordlist 1,$(FUZZ_HALF),$(FUZZ_BIN)), (part 1 of 2))
test-fuzz-2: $(FUZZ_BIN)
	$(Q)$(call FUZZ_RUN,$(wordlist $(shell expr $(FUZZ_HALF) + 1),999,$(FUZZ_BIN)), (part 2 of 2))

## fuzz-long: each fuzz target for FUZZ_SECONDS (default 600), with its
## executions and coverage (make fuzz-long FUZZ_SECONDS=60 for a shorter run)
fuzz-long: $(FUZZ_BIN)
	$(Q)$(MAKE) --no-print-directory test-fuzz FUZZ_SECONDS=$(if $(filter command line,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),600)

## bench: parse throughput and instruction counts, TLS handshake memory; the
## footprint figures (sizes, RSS, CPU, system calls per chunk)
BB := $(B)/bench
bench: $(B)/libmote.a $(B)/mote $(B)/rss_exec
	$(Q)$(MAKE) --no-print-directory tiny
	$(Q)for x in aarch64-linux-gnu- arm-linux-gnueabihf-; do \
	  $(MAKE) --no-print-directory tiny CROSS_COMPILE=$$x >/dev/null || exit 1; done
	@mkdir -p $(BB)
	$(Q)$(CC) -std=c11 -O2 -Iinclude $(JSMN_DEFS) -o $(BB)/bench_parse test/bench/bench_parse.c \
	  $(CORE_SRC)
	$(Q)$(CC) -std=c11 -Os -Iinclude $(JSMN_DEFS) -o $(BB)/llm_probe test/integration/llm_probe.c \
	  $(B)/libmote.a $(LIBS)
	$(Q)sh test/bench/run.sh $(BB)
	@echo "== a fleet of mote serve --mqtt on one broker (issue 29)"
	$(Q)$(MAKE) --no-print-directory bench-fleet

## bench-wire: wall time against round trip (0/50/150/300 ms through a delay
## proxy): a turn of 6 requests on a kept connection or new ones, one-shots
## with a full or a resumed TLS handshake, and their CPU, through the
## library and through mote; the chart in docs/wire.svg (MOTE_BEFORE=[LABEL=]PATH
## adds a turn through an older mote)
bench-wire: $(B)/libmote.a $(B)/mote
	@mkdir -p $(BB)
	$(Q)$(CC) -std=c11 -Os -Iinclude $(JSMN_DEFS) -o $(BB)/llm_probe test/integration/llm_probe.c \
	  $(B)/libmote.a $(LIBS)
	$(Q)$(PYTHON) test/bench/wire_bench.py $(B) --out $(BB)/wire.dat --mote $(B)/mote \
	  --chart docs/wire.svg $(if $(MOTE_BEFORE),--mote-before "$(MOTE_BEFORE)")

## freestanding: compile src/ for Cortex-M4 and check it needs only mem*/str*
FB := $(B)/freestanding
FS_CC := arm-none-eabi-gcc
FS_FLAGS = -mcpu=cortex-m4 -mthumb -ffreestanding -Os -std=c11 $(WARN) -Iinclude $(JSMN_DEFS) \
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
	$(Q)sh scripts/budget.sh mcu-core $$(arm-none-eabi-size $(FB)/core.o | awk 'NR == 2 {print $$1}')
	$(Q)$(PYTHON) scripts/doc_sizes.py $(B) --figure mcu-core \
	  $$(arm-none-eabi-size $(FB)/core.o | awk 'NR == 2 {print $$1}')
	@echo "freestanding: src/ builds for Cortex-M4; undefined symbols only mem*/str*"

## check-small: the small configuration (include/mote/mote_config_small.h,
## a 64 MB router): library and CLI with -Werror, then the agent's
## integration tests against it
SMALL_CFLAGS := -Os -g -DMOTE_CONFIG_FILE=\"mote/mote_config_small.h\"
check-small: deps-check
	$(Q)$(MAKE) --no-print-directory WERROR=$(WERROR) BUILDDIR=$(B)/small CFLAGS='$(SMALL_CFLAGS)' all $(B)/small/asan/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_agent.py $(B)/small/asan
	@# every limit at its floor builds too (-Werror), the CLI included
	$(Q)$(MAKE) --no-print-directory WERROR=$(WERROR) BUILDDIR=$(B)/floors \
	  CFLAGS='-Os -DMOTE_CONFIG_FILE=\"$(abspath test/config_floors.h)\"' all >/dev/null
	$(Q)$(MAKE) --no-print-directory WERROR=$(WERROR) test-install-config
	@echo "check-small: the small configuration passed the agent tests and installs as a configuration build; the floors build"

# A configuration build (the small configuration, given as its own usage
# line writes it) installs a library and a mote.pc whose flags build the
# embed example as they are: no -D flag, the values come from the
# installed mote/mote_build_config.h. check-small runs it on the library
# it built (make check compiled the library a second time for it).
.PHONY: test-install-config
test-install-config: deps-check
	$(Q)rm -rf $(B)/cfg-stage && $(MAKE) --no-print-directory BUILDDIR=$(B)/small \
	  CFLAGS='$(SMALL_CFLAGS)' install-lib PREFIX=/usr DESTDIR=$(abspath $(B))/cfg-stage >/dev/null
	$(Q)grep -q 'Cflags: -I$${includedir}$$' $(B)/cfg-stage/usr/lib/pkgconfig/mote.pc || \
	  { echo "test-install-config: the configuration build's mote.pc has more than -I:"; cat $(B)/cfg-stage/usr/lib/pkgconfig/mote.pc; exit 1; }
	$(Q)for p in embed embed-loop; do \
	  PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/cfg-stage PKG_CONFIG_LIBDIR=$(abspath $(B))/cfg-stage/usr/lib/pkgconfig \
	    $(CC) -std=c11 -o $(B)/cfg-stage/$$p examples/embed/$$( [ $$p = embed ] && echo main || echo loop).c examples/embed/device.c \
	    $$(PKG_CONFIG_SYSROOT_DIR=$(abspath $(B))/cfg-stage PKG_CONFIG_LIBDIR=$(abspath $(B))/cfg-stage/usr/lib/pkgconfig \
	    pkg-config --cflags --libs --static mote) $$( [ $$p = embed ] || echo -lev -lm) || \
	    { echo "test-install-config: $$p does not build against the installed configuration build"; exit 1; }; \
	done
	$(Q)$(PYTHON) test/integration/test_embed.py $(B)/cfg-stage >$(B)/cfg-stage/embed.log 2>&1 || \
	  { cat $(B)/cfg-stage/embed.log; echo "test-install-config: the embed example on the installed configuration build failed"; exit 1; }
	@echo "test-install-config: 3 passed, 0 failed"

## check-mcu: the core's unit tests built for a Cortex-M4 and run under
## qemu-system-arm (mps2-an386, semihosting); prints the RAM and flash used
# (test_agent and test_port hold several MB of scripted responses: more
# than the machine's 4 MiB of RAM; the rest run unchanged)
MB := $(B)/mcu
MCU_TESTS := loop jobs journal sse json llm http tport edit mqtt
MCU_CC := arm-none-eabi-gcc
MCU_CFLAGS = -mcpu=cortex-m4 -mthumb -mfloat-abi=soft --specs=picolibc.specs -Os -g -std=c11 \
  $(WARN) -Wno-cast-align -Itest/mcu -Iinclude -Iport/test -I$(MB)/jsmn $(JSMN_DEFS) \
  -ffunction-sections -fdata-sections -MMD -MP
MCU_LDFLAGS := --oslib=semihost -Wl,--gc-sections -Wl,--defsym=__flash=0x0 \
  -Wl,--defsym=__flash_size=0x400000 -Wl,--defsym=__ram=0x20000000 \
  -Wl,--defsym=__ram_size=0x400000 -Wl,--defsym=__stack_size=0x40000 \
  -Wl,--defsym=__heap_end=0x203c0000
# (__heap_end named too: picolibc.ld computes it before a --defsym'd
# __stack_size counts, and would leave the stack 2 KiB)
MCU_LIB_OBJ := $(CORE_SRC:%.c=$(MB)/obj/%.o) $(TPORT_SRC:%.c=$(MB)/obj/%.o)
MCU_ELF := $(MCU_TESTS:%=$(MB)/test_%.elf)

$(MB)/jsmn/jsmn.h: /usr/include/jsmn.h
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(MB)/obj/%.o: %.c $(MB)/jsmn/jsmn.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC/MCU  $<")
	$(Q)$(MCU_CC) $(MCU_CFLAGS) -c $< -o $@

$(MB)/test_%.elf: test/unit/test_%.c test/mcu/runner.c test/mcu/cmocka.h $(MCU_LIB_OBJ)
	@$(if $(Q),echo "  LD/MCU  $@")
	$(Q)$(MCU_CC) $(MCU_CFLAGS) -Dmain=mote_test_main -c $< -o $(MB)/test_$*.o
	$(Q)$(MCU_CC) $(MCU_CFLAGS) -DMOTE_MCU_NAME='"$*"' -c test/mcu/runner.c -o $(MB)/runner_$*.o
	$(Q)$(MCU_CC) $(MCU_CFLAGS) $(MCU_LDFLAGS) -o $@ $(MB)/test_$*.o $(MB)/runner_$*.o $(MCU_LIB_OBJ)

check-mcu: deps-check $(MCU_ELF)
	$(Q)sh scripts/mcu_run.sh $(MB) $(MCU_TESTS)

## check-mbedtls3: the unit, TLS, model client and MQTT tests again against
## mbedTLS 3.6 LTS (TLS 1.3), built from Debian 13's source (MBEDTLS=3.6)
.PHONY: check-mbedtls3
check-mbedtls3: deps-check
	$(Q)$(MAKE) --no-print-directory MBEDTLS=3.6 BUILDDIR=$(B)/mb36 WERROR=$(WERROR) \
	  unit test-tls test-client test-mqtt

## check-cross: the unit tests and the tiny build's TLS round under qemu,
## for aarch64 and armhf (static musl); and the static glibc aarch64 build
XB := $(B)/cross-aarch64
X := aarch64-linux-gnu-
check-cross: deps-check
	$(Q)fail=0; for t in aarch64-linux-gnu-:qemu-aarch64-static arm-linux-gnueabihf-:qemu-arm-static; do \
	  UNIT_SRC="$(UNIT_SRC)" LIB_SRC="$(CORE_SRC) $(SAN_POSIX_SRC) $(TPORT_SRC)" \
	  CROSS_CFLAGS="$(filter-out -MMD -MP,$(REQ_CFLAGS))" \
	    sh scripts/cross_check.sh $(B) $${t%%:*} $${t##*:} || fail=1; \
	done; [ $$fail = 0 ] || { echo "check-cross: failures above"; exit 1; }
	$(Q)$(MAKE) --no-print-directory WERROR=$(WERROR) CROSS_COMPILE=$(X) STATIC=1 BUILDDIR=$(XB)/build \
	  $(XB)/build/mote 2>&1 | grep -v "getaddrinfo' in statically linked" || true
	$(Q)sh test/integration/smoke.sh $(XB)/build/mote qemu-aarch64-static
	@# docs/EMBEDDING.md's cross-compiling commands: its first program built
	@# for aarch64 against a staged install-lib, run under qemu-user
	$(Q)rm -rf $(XB)/embedding && $(MAKE) --no-print-directory WERROR=$(WERROR) CROSS_COMPILE=$(X) \
	  STATIC=1 BUILDDIR=$(XB)/build install-lib PREFIX=/usr DESTDIR=$(abspath $(XB))/embedding/stage >/dev/null
	$(Q)$(PYTHON) test/integration/test_embedding.py $(XB)/embedding --cross=qemu-aarch64-static
	@# the OpenWrt package built and installed through its Makefile
	$(Q)$(MAKE) --no-print-directory test-openwrt-build

## tiny: the smallest static mote (musl, minimal mbedTLS from Debian's source);
## CROSS_COMPILE=aarch64-linux-gnu- or arm-linux-gnueabihf- for those, SERVE=1 with mote serve
tiny: deps-check
	$(Q)SERVE=$(if $(filter command line,$(origin SERVE)),$(SERVE),0) \
	  PAGE=$(if $(filter command line,$(origin PAGE)),$(PAGE)) sh scripts/tiny.sh $(B) $(CROSS_COMPILE)

# The tiny build runs a tool round over TLS against the local test server,
# and verifies against the system bundle within 1 MiB of RSS.
test-tiny: tiny $(B)/rss_exec
	$(Q)sh scripts/budget.sh tiny-$$($(CC) -dumpmachine | cut -d- -f1) $$(wc -c < $(B)/tiny/mote)
	$(Q)$(PYTHON) scripts/doc_sizes.py $(B) --figure tiny-$$($(CC) -dumpmachine | cut -d- -f1) \
	  $$(wc -c < $(B)/tiny/mote)
	$(Q)sh test/integration/smoke.sh $(B)/tiny/mote
	$(Q)$(PYTHON) test/integration/test_tls.py $(B)/tiny/mote --rss-max=1024 --rss-exec=$(B)/rss_exec \
	  --rss-figure=$(B)/rss-tls.kb
	$(Q)$(PYTHON) scripts/doc_sizes.py $(B) --figure rss-tls $$(cat $(B)/rss-tls.kb)
	@# roots built in (CA_BUNDLE): a throw-away CA as the only trust
	$(Q)rm -rf $(B)/builtin/certs && sh test/make_certs.sh $(B)/builtin/certs
	$(Q)$(MAKE) --no-print-directory BUILDDIR=$(B)/builtin CA_BUNDLE=$(abspath $(B))/builtin/certs/ca.crt \
	  $(B)/builtin/mote >/dev/null
	$(Q)$(PYTHON) test/integration/test_tls.py $(B)/builtin/mote --certs=$(B)/builtin/certs --builtin
	@# what mote serve adds to the tiny build (the docs' figure; SERVE=1
	@# links the serve objects in, the next make tiny links them out)
	$(Q)base=$$(wc -c < $(B)/tiny/mote) && $(MAKE) --no-print-directory tiny SERVE=1 >/dev/null && \
	  $(PYTHON) scripts/doc_sizes.py $(B) --figure serve-adds $$(( $$(wc -c < $(B)/tiny/mote) - base ))

# Runs a command and reports its own peak RSS (static musl: its fork
# costs next to nothing, so small figures are not hidden).
$(B)/rss_exec: test/bench/rss_exec.c
	@mkdir -p $(@D)
	$(Q)musl-gcc -std=c11 -Os -static -o $@ $<

## size: text/data/bss of the core, the library and build/mote, the structs'
## memory and the largest stack frames, for this CC/CROSS_COMPILE and CFLAGS
## (make size CROSS_COMPILE=aarch64-linux-gnu- CFLAGS="-Os -DMOTE_MAX_JOBS=8")
size: $(B)/libmote_core.a $(B)/libmote.a
	-$(Q)$(MAKE) --no-print-directory $(B)/mote >/dev/null 2>&1
	@echo "core (src/):                 text    data     bss"
	$(Q)$(SIZE) -t $(B)/libmote_core.a | tail -n 1 | awk '{printf "%30d %7d %7d\n", $$1, $$2, $$3}'
	@echo "library (core + port):"
	$(Q)$(SIZE) -t $(B)/libmote.a | tail -n 1 | awk '{printf "%30d %7d %7d\n", $$1, $$2, $$3}'
	$(Q)if [ -f $(B)/mote ]; then echo "$(B)/mote:"; $(SIZE) $(B)/mote | tail -n 1 | \
	  awk '{printf "%30d %7d %7d\n", $$1, $$2, $$3}'; \
	  $(STRIP) -o $(B)/mote.stripped $(B)/mote && echo "$(B)/mote stripped: $$(wc -c < $(B)/mote.stripped) bytes"; \
	  else echo "$(B)/mote: not linked (no mbedTLS for this target? TLS=none links)"; fi
	$(Q)CC="$(CC)" NM="$(NM)" FLAGS="$(filter-out -MMD -MP,$(REQ_CFLAGS)) $(CFLAGS)" \
	  SRC="$(CORE_SRC) $(POSIX_SRC) $(CLI_SRC)" sh scripts/sizeof.sh $(B)

## demo: run mote end to end on this machine (no network, no API key)
demo: deps-check all
	$(Q)sh scripts/demo.sh $(B)

## install: install the library, headers, mote.pc and mote under DESTDIR/PREFIX
## install-lib: the same without mote (what a library package needs: no libev)
install: install-lib $(B)/mote
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin
	$(Q)install -m 0755 $(B)/mote $(DESTDIR)$(PREFIX)/bin/

install-lib: $(B)/libmote.a
	$(Q)install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/mote \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig
	$(Q)install -m 0644 $(B)/libmote.a $(DESTDIR)$(PREFIX)/lib/
	$(Q)install -m 0644 include/mote/*.h $(DESTDIR)$(PREFIX)/include/mote/
	@# the configuration built with (-DMOTE_*, MOTE_CONFIG_FILE) as a header
	@# mote_config.h includes: programs need no -D flag to match it
	$(Q)sh scripts/build_config.sh $(DESTDIR)$(PREFIX)/include/mote $(filter -DMOTE_%,$(CFLAGS))
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBS@|$(LIBS)|' -e 's|@VERSION@|$(shell sed -n \
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

-include $(shell find $(B)/obj $(B)/asan $(B)/mcu $(B)/fuzz/obj -name '*.d' -type f 2>/dev/null)

# ---- mote serve's MCP server and OpenAI-compatible endpoint ----
# The official MCP TypeScript SDK's client against /mcp (Streamable HTTP)
# and `mote mcp` (stdio), the official openai client, mote as the MCP
# client of mote, kill -9 while a call runs, hostile clients; the clients
# come from .deps/npm (make deps).
.PHONY: test-mcp-server
CHECK_GROUPS += test-mcp-server
test-mcp-server: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_mcp_server.py $(SB)

## bench-mcp-server: a tool call from the official MCP SDK's client through
## mote serve's /mcp and through mote mcp (median of 20); RSS per MCP session
.PHONY: bench-mcp-server
bench-mcp-server: $(B)/mote
	$(Q)$(PYTHON) test/bench/mcpserver_bench.py $(B) 20 8
# ---- end of the MCP server's block ----

# ---- providers (a device user's picks) ----
# Each provider's behaviour through the real binary against the test
# server's provider profiles (test/llm_profiles.py): errors that say why
# in every frontend, streams without [DONE], ids kept, calls sharing an
# index.
.PHONY: test-providers
test-providers: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_providers.py $(SB)
CHECK_GROUPS += test-providers

## bench-providers: what the provider profiles cost the reference APIs: the
## request bodies' bytes and mote's CPU per request of a turn of three tool
## rounds (median of 21), for MOTE_BEFORE=PATH (an older mote) and this one
.PHONY: bench-providers
bench-providers: $(B)/mote
	$(Q)$(PYTHON) test/bench/provider_bench.py $(MOTE_BEFORE) $(B)/mote --runs 21
# ---- end of the providers' block ----

# ---- unattended devices (approvals' deadlines, schedules, the budget) ----
# build/asan/mote against the test LLM server and a private mosquitto:
# an approval denied by itself at its deadline (the turn goes on, the model
# reads why), the approvals' retained summary on MQTT; a budget of N
# requests never sends the N+1th, across a kill -9; schedules: a kill
# sweep (every occurrence once or skipped with its reason), 12 missed
# occurrences caught up once, the API, MQTT, the agent's schedule tool.
.PHONY: test-unattended
test-unattended: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_unattended.py $(SB)
CHECK_GROUPS += test-unattended
# ---- end of the unattended devices' block ----

## bench-sched: the schedules' kill sweep at length (SIGKILL 100 times at
## random moments, a schedule every 2 s): every occurrence once or skipped
.PHONY: bench-sched
bench-sched: $(B)/mote
	$(Q)$(PYTHON) test/bench/sched_bench.py $(B) 100

# ---- mote serve's page (GET /) ----
# The page (examples/serve/page/: HTML, CSS, JavaScript; no build step but
# scripts/page.sh) gzip-compressed into the binary with its CSP. PAGE=0
# leaves it out (GET / answers 404); it follows SERVE. The browser tests
# drive Debian's headless Chromium against a real mote serve.
PAGE ?= $(SERVE)
ifeq ($(SERVE),0)
override PAGE := 0
endif
PAGE_SRC := $(sort $(wildcard examples/serve/page/*))
ifeq ($(PAGE),1)
PAGE_OBJ := $(B)/page/page.o $(B)/page/page_gz.o
else ifneq ($(SERVE),0)
PAGE_OBJ := $(B)/obj/examples/tiny/page_none.o
endif
CLI_OBJ += $(PAGE_OBJ)
SAN_CLI_OBJ += $(PAGE_OBJ)
NONE_OBJ += $(PAGE_OBJ)
$(B)/mote $(SB)/mote $(B)/none/mote: $(PAGE_OBJ)

$(B)/page/page.c: $(PAGE_SRC) scripts/page.sh
	$(Q)sh scripts/page.sh examples/serve/page $(B)/page >/dev/null

$(B)/page/page.o: $(B)/page/page.c
	$(Q)$(CC) $(REQ_CFLAGS) $(CFLAGS) -c $< -o $@

$(B)/page/page_gz.o: $(B)/page/page.c
	$(Q)$(CC) -c -o $@ $(B)/page/page.S

# the page's sizes are among the figures the docs quote (doc_sizes.py)
test-docs doc-sizes: $(B)/page/page.c

## test-page: the page in headless Chromium against mote serve and the test
## LLM server (log in, stream, approve, deny, cancel, reload, escaping)
.PHONY: test-page page-shot
# $(SB)/nopage/mote: the same mote linked as PAGE=0 links it (the page's
# objects replaced by page_none.o), for the test of the switch.
$(SB)/nopage/mote: $(SAN_CLI_OBJ) $(SAN_LIB_OBJ) $(B)/obj/examples/tiny/page_none.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD/SAN  $@")
	$(Q)$(CC) $(SAN) -o $@ $(filter-out $(B)/page/% $(B)/obj/examples/tiny/page_none.o,$(SAN_CLI_OBJ)) \
	  $(B)/obj/examples/tiny/page_none.o $(filter-out $(SB)/port/test/%,$(SAN_LIB_OBJ)) \
	  $(MBEDTLS_LIBS) -lpthread
test-page: $(SB)/mote $(SB)/nopage/mote $(B)/page/page.c $(B)/libmote.a
	$(Q)sh scripts/budget.sh page $$(( $$(wc -c < $(B)/page/page.html.gz) + \
	  $$($(SIZE) $(B)/obj/src/serve_page.o | awk 'NR == 2 {print $$1 + $$2}') ))
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_page.py $(SB)
CHECK_GROUPS += test-page

## page-shot: docs/page.png, the page with a pending approval (made by the
## browser test)
page-shot: $(SB)/mote
	$(Q)MOTE_PAGE_SHOT=$(abspath docs/page.png) MOTE_TEST_ONLY=screenshot \
	  $(PYTHON) test/integration/test_page.py $(SB)

## bench-page: the page's bytes, its time to first paint in headless Chromium
## and the RSS of mote serve with 5 pages open, from a tiny SERVE=1 build
.PHONY: bench-page
bench-page: deps-check
	$(Q)$(MAKE) --no-print-directory tiny SERVE=1
	$(Q)$(PYTHON) test/bench/page_bench.py $(B)/tiny/mote $(B)/tiny/build/page
# ---- end of mote serve's page block ----

# ---- a fleet of devices (issue: configuration, metrics, the broker) ----
# build/asan/mote as one device of a fleet against a private mosquitto and
# the test LLM server: MQTT requests to long conversations on disk, strict
# MQTT requests, creation that never replaces, one serve per state
# directory, links in the state directory.
.PHONY: test-fleet
test-fleet: $(SB)/mote
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(PYTHON) test/integration/test_fleet.py $(SB)
CHECK_GROUPS += test-fleet
# ---- end of the fleet's block ----

# ---- mote serve's configuration file and its reload ----
# build/asan/mote with --config files against the test LLM server and a
# private mosquitto: strict `key = value` lines, a flag over the file,
# SIGHUP under load (nothing dropped, the next turns on the new model), a
# bad file refused, secrets from files and credentials, the client id.
.PHONY: test-config
test-config: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_config.py $(SB)
CHECK_GROUPS += test-config
# the file's reader, fuzzed (make test-fuzz runs every target)
$(FZ)/fuzz_conf: FUZZ_EXTRA := examples/serve/conf.c examples/common/readfile.c
$(FZ)/fuzz_conf: examples/serve/conf.c examples/serve/conf.h
# ---- end of the configuration's block ----

# ---- the embedding guide ----
# docs/EMBEDDING.md's programs and the README's example, extracted from the
# documents, built against a staged install-lib with the guide's commands
# and run against the test LLM server: a tool round, SIGTERM's drain,
# Ctrl+C's cancel.
EMB := $(B)/embedding
.PHONY: test-embedding
test-embedding: $(B)/libmote.a
	$(Q)rm -rf $(EMB) && $(MAKE) --no-print-directory install-lib PREFIX=/usr \
	  DESTDIR=$(abspath $(EMB))/stage >/dev/null
	$(Q)$(MAKE) --no-print-directory install-lib PREFIX=$(abspath $(EMB))/prefix >/dev/null
	$(Q)$(PYTHON) test/integration/test_embedding.py $(EMB)
CHECK_GROUPS += test-embedding
# ---- end of the embedding guide's block ----

# ---- C++ ----
# Every public header compiles as C++ (g++ -fsyntax-only, warnings as
# errors), and a C++ program links against libmote.a and runs a session.
.PHONY: test-cxx
test-cxx: $(B)/libmote.a
	$(Q)for h in include/mote/*.h; do printf '#include "mote/%s"\n' $$(basename $$h) | \
	  g++ -x c++ -std=c++11 -fsyntax-only -Wall -Wextra -Werror $(CONFIG_CFLAGS) -Iinclude - || \
	  { echo "test-cxx: $$h does not compile as C++"; exit 1; }; done
	$(Q)bare=$$(grep -L 'extern "C"' $(filter-out %/mote_config.h %/mote_config_small.h,$(wildcard include/mote/*.h))); \
	  [ -z "$$bare" ] || { echo "test-cxx: no extern \"C\" block (C++ would not link): $$bare"; exit 1; }
	$(Q)g++ -std=c++11 -Wall -Wextra -Werror $(CONFIG_CFLAGS) -Iinclude -o $(B)/cxx_probe \
	  test/integration/cxx_probe.cc $(B)/libmote.a $(LIBS)
	$(Q)$(B)/cxx_probe
	@echo "test-cxx: $(words $(wildcard include/mote/*.h)) headers and a program: 2 passed, 0 failed"
CHECK_GROUPS += test-cxx
# ---- end of C++'s block ----

# ---- the OpenWrt package (packaging/openwrt/) ----
# shellcheck on its init script and UCI translation; /etc/config/mote
# translated under busybox's ash and dash and taken by build/mote (start,
# SIGHUP reload, strictness, refusals); the init script's procd calls; the
# package's Makefile built with a stand-in for the SDK. make check leaves
# that build out (it compiles the whole library again, as the package
# does: 20 s of CPU alone, 70-90 s inside make check); check-cross (a CI
# step) runs the whole test with it, as test-openwrt-build.
.PHONY: test-openwrt test-openwrt-build
test-openwrt: $(B)/mote
	$(Q)MOTE_OPENWRT_BUILD=$(OPENWRT_BUILD) sh test/openwrt/test_openwrt.sh $(B)/mote
test-openwrt-build: $(B)/mote
	$(Q)MOTE_OPENWRT_BUILD=1 sh test/openwrt/test_openwrt.sh $(B)/mote
OPENWRT_BUILD ?= 1
CHECK_GROUPS += test-openwrt
# ---- end of the OpenWrt package's block ----

# ---- OAuth for MCP servers over HTTP ----
## test-mcp-oauth: `mote mcp login` / `logout` and bearer tokens: the MCP
## conformance suite's auth scenarios, a hostile authorization server
## (make check runs it in two halves at once: most of its time is the
## conformance suite's Node.js starting for each scenario)
.PHONY: test-mcp-oauth test-mcp-oauth-1 test-mcp-oauth-2
CHECK_GROUPS += test-mcp-oauth-1 test-mcp-oauth-2
test-mcp-oauth: $(SB)/mote
	$(Q)$(LSAN_OFF) $(PYTHON) test/integration/test_mcp_oauth.py $(SB)
test-mcp-oauth-1 test-mcp-oauth-2: $(SB)/mote
	$(Q)$(LSAN_OFF) MOTE_TEST_SHARD=$(subst test-mcp-oauth-,,$@)/2 $(PYTHON) \
	  test/integration/test_mcp_oauth.py $(SB)
# ---- end of OAuth's block ----
