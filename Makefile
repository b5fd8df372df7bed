# qsb: one non-recursive Makefile.
#   make            build bin/qsb-* and lib/libqsb.a (installs missing
#                   Debian packages first when run as root)
#   make check      the whole test suite; ends with "N passed, N failed"
#   make asan       the same suite against an address+undefined build
#   make lint       mandoc, shellcheck, zsh -n
#   make demo       a short sandboxed run
#   make install / uninstall   PREFIX, DESTDIR as usual

VERSION		= 0.1.0

PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
MANDIR		?= $(PREFIX)/share/man
DATADIR		?= $(PREFIX)/share
BASHCOMPDIR	?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR	?= $(DATADIR)/zsh/vendor-completions
DESTDIR		?=

CC		?= cc
CFLAGS		?= -O2 -g
CPPFLAGS	?=
LDFLAGS		?=

# Where objects and programs go: "make asan" builds into build/asan.
BUILD		?= build
BINOUT		?= bin
LIBOUT		?= lib/libqsb.a

# Evaluated when used, after tools/deps.sh has installed libbsd-dev.
BSD_CFLAGS	= $(shell pkg-config --cflags libbsd-overlay)
# libbsd linked statically: two fewer shared objects to load per run
BSD_LIBS	= -Wl,-Bstatic $(shell pkg-config --static --libs-only-l libbsd-overlay) -Wl,-Bdynamic

WARN		= -Wall -Wextra -Wshadow -Wformat=2 -Wno-format-nonliteral -Werror
HARDEN		= -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
LDHARDEN	= -pie -Wl,-z,relro,-z,now
ALL_CPPFLAGS	= -D_GNU_SOURCE -DQSB_VERSION='"$(VERSION)"' -Ilib $(BSD_CFLAGS) $(CPPFLAGS)
ALL_CFLAGS	= -std=c11 $(WARN) $(HARDEN) $(CFLAGS)
ALL_LDFLAGS	= $(LDHARDEN) $(LDFLAGS)
LIBS		= $(BSD_LIBS)

PROGS		= qsb-cleanup qsb-exec qsb-perm qsb-status qsb-workspace
LIBSRC		= lib/acp.c lib/backend-bwrap.c lib/backend-native.c lib/backend-none.c \
		  lib/cgroup.c lib/cleanup.c lib/cli.c lib/config.c lib/diag.c \
		  lib/event.c lib/exec.c lib/fileops.c lib/json.c \
		  lib/landlock.c lib/parse.c lib/path.c lib/perm.c \
		  lib/policy.c lib/protect.c lib/ring.c lib/rmtree.c \
		  lib/root.c lib/run.c lib/seccomp.c lib/state.c lib/status.c \
		  lib/strv.c lib/terminal.c lib/utf8.c lib/workspace.c
LIBOBJ		= $(LIBSRC:lib/%.c=$(BUILD)/lib/%.o)
UNITSRC		= $(wildcard tests/unit/test-*.c)
UNITBIN		= $(UNITSRC:tests/unit/%.c=$(BUILD)/tests/%)
BINS		= $(PROGS:%=$(BINOUT)/%)
MAN1		= $(PROGS:%=man/%.1)
MAN5		= man/qsb-policy.5
MAN7		= man/qsb.7
POLICIES	= policies/compat.json policies/permissive.json policies/strict.json
BASHCOMP	= $(PROGS:%=completions/bash/%)

all: $(BINS) $(LIBOUT)

deps:
	@sh tools/deps.sh build

$(BUILD)/lib/%.o: lib/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/src/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%.o: tests/unit/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(LIBOUT): $(LIBOBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $(LIBOBJ)

$(BINOUT)/%: $(BUILD)/src/%.o $(LIBOUT)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBOUT) $(LIBS)

$(BUILD)/tests/test-%: $(BUILD)/tests/test-%.o $(LIBOUT)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBOUT) $(LIBS) -lm

$(BUILD)/bench/%: bench/%.c $(LIBOUT) | deps
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBOUT) $(LIBS)

unit: $(UNITBIN)

bench: all $(BUILD)/bench/dump-seccomp $(BUILD)/bench/first-output
	@sh tools/deps.sh bench sandbox demo
	sh bench/exec
	sh bench/perm
	sh bench/cleanup
	sh bench/terminal

check: all unit
	@sh tools/deps.sh check sandbox
	@QSB_BIN=$(CURDIR)/$(BINOUT) QSB_UNIT=$(CURDIR)/$(BUILD)/tests \
	    QSB_MAKEVARS="BUILD=$(BUILD) BINOUT=$(BINOUT) LIBOUT=$(LIBOUT)" \
	    sh tests/run

ASAN_FLAGS	= -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
		  -fno-sanitize-recover=undefined
asan:
	$(MAKE) BUILD=build/asan BINOUT=build/asan/bin \
	    LIBOUT=build/asan/libqsb.a CFLAGS="$(ASAN_FLAGS)" \
	    LDFLAGS="-fsanitize=address,undefined" check

lint: all
	@sh tools/deps.sh lint
	mandoc -Tlint -Wwarning man/*
	shellcheck -s sh tools/*.sh tests/run bench/cleanup bench/exec bench/perm bench/terminal
	shellcheck -s bash .ci/run tests/helpers/*.bash
	shellcheck -s bash completions/bash/*
	zsh -n completions/zsh/_qsb

demo: all
	@sh tools/deps.sh demo
	@sh tools/demo.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR) \
	    $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(DATADIR)/qsb/policies
	install -m 755 $(BINS) $(DESTDIR)$(BINDIR)
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5
	install -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7
	install -m 644 $(BASHCOMP) $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 completions/zsh/_qsb $(DESTDIR)$(ZSHCOMPDIR)
	install -m 644 $(POLICIES) $(DESTDIR)$(DATADIR)/qsb/policies

uninstall:
	rm -f $(PROGS:%=$(DESTDIR)$(BINDIR)/%)
	rm -f $(MAN1:man/%=$(DESTDIR)$(MANDIR)/man1/%)
	rm -f $(MAN5:man/%=$(DESTDIR)$(MANDIR)/man5/%)
	rm -f $(MAN7:man/%=$(DESTDIR)$(MANDIR)/man7/%)
	rm -f $(PROGS:%=$(DESTDIR)$(BASHCOMPDIR)/%)
	rm -f $(DESTDIR)$(ZSHCOMPDIR)/_qsb
	rm -f $(POLICIES:%=$(DESTDIR)$(DATADIR)/qsb/%)
	-rmdir $(DESTDIR)$(DATADIR)/qsb/policies $(DESTDIR)$(DATADIR)/qsb 2>/dev/null

clean:
	rm -rf build bin lib/libqsb.a

.PHONY: all deps unit check asan lint demo bench install uninstall clean

-include $(LIBOBJ:.o=.d) $(PROGS:%=$(BUILD)/src/%.d) $(UNITSRC:tests/unit/%.c=$(BUILD)/tests/%.d)
