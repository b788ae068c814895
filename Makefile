# Build and install nearby with its manual and shell completions.
#
#   make                                  release build (in .build-release)
#   sudo make install [PREFIX=/usr/local] [DESTDIR=/tmp/stage]
#   sudo make uninstall [PREFIX=…] [DESTDIR=…]
#
# The Swift runtime and Foundation are linked statically (SWIFT_FLAGS) and the installed binary is
# stripped (INSTALL_PROGRAM): it does not depend on where the toolchain is, and is ~75 MB, not 140.
# The static link prints one warning from glibc: "the use of `mktemp' is dangerous, better use
# `mkstemp' or `mkdtemp'". It is Foundation's (FoundationEssentials' Data.write(options: .atomic)
# calls mktemp, then opens the name with O_CREAT|O_EXCL and tries again on EEXIST: no race), not
# nearby's, and linking Foundation statically brings the reference into our link. It is left
# visible: GNU ld and gold have no switch for one symbol's warning (-w hides every warning), and
# lld hides it only by ignoring every .gnu.warning section — both would hide the next real one.
# The manual and completions are the committed files (scripts/generate-docs makes them;
# scripts/check-docs keeps them current).

PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
SCRATCH ?= .build-release
SWIFT_FLAGS ?= --static-swift-stdlib
INSTALL ?= install
INSTALL_PROGRAM ?= $(INSTALL) -m 755 -s

bindir := $(PREFIX)/bin
man1dir := $(PREFIX)/share/man/man1
bashcompletiondir := $(PREFIX)/share/bash-completion/completions
zshcompletiondir := $(PREFIX)/share/zsh/site-functions
fishcompletiondir := $(PREFIX)/share/fish/vendor_completions.d

binary := $(SCRATCH)/release/nearby
sources := Package.swift $(shell find Sources -type f)

.PHONY: all install uninstall docs check-docs

all: $(binary)

# Rebuilt only when a source changed, so `make && sudo make install` does not build as root.
$(binary): $(sources)
	$(SWIFT) build -c release --scratch-path $(SCRATCH) --product nearby $(SWIFT_FLAGS)
	@touch $@

install: $(binary)
	$(INSTALL) -d "$(DESTDIR)$(bindir)" "$(DESTDIR)$(man1dir)" "$(DESTDIR)$(bashcompletiondir)" \
		"$(DESTDIR)$(zshcompletiondir)" "$(DESTDIR)$(fishcompletiondir)"
	$(INSTALL_PROGRAM) $(binary) "$(DESTDIR)$(bindir)/nearby"
	$(INSTALL) -m 644 man/nearby.1 "$(DESTDIR)$(man1dir)/nearby.1"
	$(INSTALL) -m 644 completions/nearby.bash "$(DESTDIR)$(bashcompletiondir)/nearby"
	$(INSTALL) -m 644 completions/_nearby "$(DESTDIR)$(zshcompletiondir)/_nearby"
	$(INSTALL) -m 644 completions/nearby.fish "$(DESTDIR)$(fishcompletiondir)/nearby.fish"

uninstall:
	rm -f "$(DESTDIR)$(bindir)/nearby" "$(DESTDIR)$(man1dir)/nearby.1" \
		"$(DESTDIR)$(bashcompletiondir)/nearby" "$(DESTDIR)$(zshcompletiondir)/_nearby" \
		"$(DESTDIR)$(fishcompletiondir)/nearby.fish"

docs:
	scripts/generate-docs

check-docs:
	scripts/check-docs
