# package.mk - what packaging/openwrt/Makefile needs of the SDK's
# include/package.mk (test/openwrt/test_openwrt.sh): the build directory,
# the install commands, and BuildPackage as two targets - compile
# (Build/Prepare, Build/Compile) and install (Package/NAME/install into
# DEST).
PKG_BUILD_DIR ?= $(BUILD_DIR)/$(PKG_NAME)-$(PKG_VERSION)
PKG_JOBS ?= -j2
INSTALL_DIR := install -d -m0755
INSTALL_BIN := install -m0755
INSTALL_CONF := install -m0600
INSTALL_DATA := install -m0644

define BuildPackage
.PHONY: compile install
compile:
	$$(Build/Prepare)
	$$(Build/Compile)
install:
	$$(call Package/$(1)/install,$$(DEST))
endef
