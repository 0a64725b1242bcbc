# rules.mk - the OpenWrt SDK's variables that packaging/openwrt/Makefile
# uses, for building it without the SDK (test/openwrt/test_openwrt.sh):
# the host's compiler stands for the target's, its mbedTLS for libmbedtls.
INCLUDE_DIR ?= $(TOPDIR)
BUILD_DIR ?= /tmp/mote-openwrt-build
TARGET_CROSS ?=
TARGET_CC ?= $(TARGET_CROSS)gcc
TARGET_AR ?= $(TARGET_CROSS)ar
TARGET_CFLAGS ?= -Os -pipe
TARGET_CPPFLAGS ?=
TARGET_LDFLAGS ?=
