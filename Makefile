# make demo: start Redis and PostgreSQL if needed, then run every step.
# make test: start them if needed, lint, then run the tests with -race
#   (cmd/drill's test runs a short drill: pause and restart, lock and fenced),
#   then scan Redis and PostgreSQL for test: keys and rows left behind.
# make drills: real processes, real faults (lab/cmd/drill), short; SEEDS=20 for more.
# make workshop: every step briefly, held to the lesson (JSON=1 also writes
#   workshop-<host>.json here); make compare: those files side by side;
#   make room: the live room, its page filled in as laptops hand them in
#   (make workshop ROOM=...), and with RACE=1 the race of their locks
#   (make race ROOM=...).
# make cluster-up: a Redis Cluster (3 masters, 3 replicas) on 127.0.0.1:7001-7006
#   (CLUSTER_PORT=8001 for others); make test-cluster: the locks' tests and
#   short runs of steps 2, 5 and 6 on it, then the cluster is stopped.
# Services come from lab/cmd/servers: whatever already answers and lets us log
# in, else docker compose, else local redis-server and PostgreSQL binaries,
# installed first (apt-get or brew) when they are missing.
# make redlock-up: three independent Redis nodes for the lab's Redlock
#   (lab/cmd/loadtest's redlock strategy, the drill's redlock cells;
#   REDLOCK_ADDRS, default 127.0.0.1:6380,6381,6382), no persistence.
#   `make up` leaves them out.

GO ?= go

.PHONY: help up compose-up down compose-down status redlock-up redlock-down demo lint test transcripts workshop workshop-bin compare room race drills \
	cluster-up cluster-down cluster-status test-cluster judge judge-bin judge-matrix exercise

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

# lab/cmd/servers, built into .services/bin only when one of its sources is
# newer, so that `make up` with everything running takes milliseconds
# rather than the second of a `go run`. SERVICES_PKGS is every package of
# lab/ it imports, ROOT_SERVICES_PKGS every package of the root
# (cmd/servers's TestMakefile_listsEveryPackage keeps both so).
SERVICES = .services/bin/servers
SERVICES_PKGS = cmd/servers internal/env internal/launch
ROOT_SERVICES_PKGS = internal/safe wallet wallet/postgres
LAB_SERVICES_SRC = $(wildcard $(addprefix lab/,$(addsuffix /*,$(SERVICES_PKGS)))) $(wildcard $(addsuffix /*,$(ROOT_SERVICES_PKGS)))
$(SERVICES): go.mod lab/go.mod lab/go.sum $(LAB_SERVICES_SRC)
	@cd lab && $(GO) build -o ../$@ ./cmd/servers

up: $(SERVICES) ## make Redis and PostgreSQL reachable and check that they let us in
	@$(SERVICES) up
compose-up: up

down: $(SERVICES) ## stop what `make up` (and `make redlock-up`) started, nothing else
	@$(SERVICES) down
compose-down: down

redlock-up: $(SERVICES) ## start three independent Redis nodes for Redlock (REDLOCK_ADDRS), no persistence
	@$(SERVICES) redlock-up
redlock-down: $(SERVICES) ## stop the Redlock nodes `make redlock-up` started, nothing else
	@$(SERVICES) redlock-down

status: $(SERVICES) ## say whether Redis and PostgreSQL answer and let us in
	@$(SERVICES) status

demo: up ## run every step program in order
	@echo "== step 1: no lock, lost updates"
	@$(GO) run ./cmd/step1-race
	@echo "== step 2: a hand-built lease, SET NX PX and a token-checked release"
	@$(GO) run ./cmd/step2-lock
	@echo "== step 3: work that outlives the TTL, the watchdog, a lease lost mid-work (about 10 s)"
	@$(GO) run ./cmd/step3-ttl
	@echo "== step 4: bsm/redislock, and what lockstep retries cost"
	@$(GO) run ./cmd/step4-redislock
	@echo "== step 5: a paused holder, fencing tokens checked by PostgreSQL, a version column"
	@$(GO) run ./cmd/step5-fencing
	@echo "== step 6: every strategy under load, side by side (about 10 s)"
	@$(GO) run ./cmd/step6-loadtest -duration 1s

# staticcheck and actionlint are tool dependencies of lab/go.mod, built
# once into .services/bin: the root's go.mod requires only the article's
# three modules.
STATICCHECK = .services/bin/staticcheck
$(STATICCHECK): lab/go.mod lab/go.sum
	@cd lab && $(GO) build -o ../$@ honnef.co/go/tools/cmd/staticcheck
ACTIONLINT = .services/bin/actionlint
$(ACTIONLINT): lab/go.mod lab/go.sum
	@cd lab && $(GO) build -o ../$@ github.com/rhysd/actionlint/cmd/actionlint

lint: $(STATICCHECK) $(ACTIONLINT) ## go vet (the judge kit for Windows and macOS too), gofmt, staticcheck and go mod tidy -diff, in the root and in lab/; actionlint on .github/workflows
	$(GO) vet ./...
	cd lab && $(GO) vet ./...
	cd lab && GOOS=windows $(GO) vet ./judge && GOOS=darwin $(GO) vet ./judge # the judge kit is imported on every OS
	@out=$$(gofmt -l .); [ -z "$$out" ] || { echo "gofmt -l: these files need gofmt -w:"; echo "$$out"; exit 1; }
	$(STATICCHECK) ./...
	cd lab && ../$(STATICCHECK) ./...
	$(GO) mod tidy -diff
	cd lab && $(GO) mod tidy -diff
	$(ACTIONLINT)
	@direct=$$($(GO) list -m -f '{{if not .Indirect}}{{if not .Main}}{{.Path}}{{end}}{{end}}' all | sort | tr '\n' ' '); \
	[ "$$direct" = "github.com/bsm/redislock github.com/jackc/pgx/v5 github.com/redis/go-redis/v9 " ] || \
	{ echo "the root go.mod requires $$direct; the article's repo requires go-redis, bsm/redislock and pgx only"; exit 1; }

test: up lint ## make lint, then go test -race against the real services (the root's, then the lab's), then check that no test left a key or a row
	$(GO) test -race ./...
	cd lab && $(GO) test -race ./...
	cd lab && WALLETLOCK_LEFTOVERS=1 $(GO) test -count=1 -run '^TestNoLeftovers$$' .

# Run every command the pages show again, on servers of the test's own, and
# write what each printed into the page.
transcripts: ## run the commands of TUTORIAL.md and docs/ again and write their output into the pages
	cd lab && $(GO) test -count=1 -timeout 30m -run '^TestTutorial_transcripts$$' -update .

# lab/cmd/workshop, built into .services/bin and run from here, so that
# the files it writes and reads are in this folder: it builds the root's
# steps and the lab's drill itself (go build is cached: a second build
# takes a moment).
WORKSHOP = .services/bin/workshop
workshop-bin:
	@cd lab && $(GO) build -o ../$(WORKSHOP) ./cmd/workshop

workshop: up workshop-bin ## run every step briefly, compare with the tutorial (JSON=1: also write workshop-<host>.json here; LABEL=name; ROOM=<join line>: hand it in to the live room too)
	@$(WORKSHOP) $(if $(value JSON)$(value ROOM),-save) $(if $(value LABEL),-host $(call arg,LABEL)) $(if $(value ROOM),-room $(call arg,ROOM))

# The facilitator's page: every collected workshop-*.json side by side.
# ROOM names the page here; for make workshop and make race it is the
# live room's join line.
FILES ?= $(wildcard workshop-*.json)
compare: workshop-bin ## put the room's machines side by side in room.html (FILES="a.json b.json", ROOM=page.html)
	@$(WORKSHOP) -compare -html $(if $(value ROOM),$(call arg,ROOM),room.html) $(files)

# The live room (docs/workshop.md): the room's page over HTTP on ADDR
# (host:port; by default this machine's address on its network, port
# 8080), filled in as the laptops hand in their documents, with the files
# of this folder, and FILES when given. RACE=1 adds the race of the
# laptops' locks, on a Redis and a PostgreSQL of the room's own, removed
# when it ends.
#   make room RACE=1                the facilitator: the page, and a join line
#   make workshop ROOM=<join line>  a laptop: the workshop, handed in
#   make race ROOM=<join line>      a laptop: its lock/ in the race (LOCK=./mylock for another)
ADDR ?=
RACE ?=
room: workshop-bin ## the live room: its page on ADDR, filled in as laptops hand their documents in (RACE=1: the race of their locks too)
	@$(WORKSHOP) -serve $(if $(value ADDR),-addr $(call arg,ADDR)) $(if $(value RACE),-race) $(if $(filter command line,$(origin FILES)),$(files))

race: workshop-bin ## race this laptop's lock/ (LOCK=./mylock) in the live room's race (ROOM=<join line>, LABEL=name)
	@$(WORKSHOP) -race -room $(call arg,ROOM) $(if $(value LOCK),-lock $(call arg,LOCK)) $(if $(value LABEL),-host $(call arg,LABEL))

SEEDS ?= 3
drills: up ## pause and restart against lock and fenced, real processes (SEEDS=3, under 2 minutes)
	@cd lab && $(GO) run ./cmd/drill -nemesis pause,restart -strategy lock,fenced -seeds $(SEEDS)

# A Redis Cluster beside the main Redis: the programs use it when REDIS_ADDR
# lists its nodes, comma-separated (or REDIS_URL has addr= parameters).
CLUSTER_PORT ?= 7001
CLUSTER_ADDR = 127.0.0.1:$(CLUSTER_PORT),127.0.0.1:$(shell expr $(CLUSTER_PORT) + 1),127.0.0.1:$(shell expr $(CLUSTER_PORT) + 2)
export CLUSTER_PORT

cluster-up: $(SERVICES) ## start a Redis Cluster, 3 masters + 3 replicas on 127.0.0.1:7001-7006 (CLUSTER_PORT=7001)
	@$(SERVICES) cluster-up
cluster-down: $(SERVICES) ## stop the cluster that `make cluster-up` started, nothing else
	@$(SERVICES) cluster-down
cluster-status: $(SERVICES) ## say what each node of the cluster answers
	@$(SERVICES) cluster-status

# The locks' tests and steps 2, 5 and 6, briefly, on a real cluster: the
# root's lock and wallet, the lab's hardened and fair locks and its
# services. A cluster this target started is stopped afterwards, pass or
# fail; one that was already up is left running.
test-cluster: up $(SERVICES) ## the locks' tests and short runs of steps 2, 5 and 6 on a cluster
	@kept=$$(test -f .services/cluster-$(CLUSTER_PORT).started && echo yes); \
	$(SERVICES) cluster-up || exit 1; \
	status=0; \
	export REDIS_URL= REDIS_ADDR='$(CLUSTER_ADDR)'; \
	echo "== go test -race ./lock/... ./wallet/... on the cluster $$REDIS_ADDR" && \
	$(GO) test -race ./lock/... ./wallet/... && \
	echo "== lab: go test -race ./lock/... ./internal/env on the cluster" && \
	(cd lab && $(GO) test -race ./lock/... ./internal/env) && \
	echo "== step 2 on the cluster" && $(GO) run ./cmd/step2-lock && \
	echo "== step 5 on the cluster" && $(GO) run ./cmd/step5-fencing && \
	echo "== step 6 on the cluster" && $(GO) run ./cmd/step6-loadtest -duration 300ms \
	|| status=$$?; \
	[ -n "$$kept" ] || $(SERVICES) cluster-down; \
	exit $$status

# The judge (lab/cmd/judge): a lock through the article's properties, on a
# redis-server of its own behind a proxy of its own, and PostgreSQL, with
# real holder processes it stops between any two commands.
#   make judge                          the root's lock (lock/), every chapter
#   make judge STEP=2 SEED=7            the lease chapter (step 2), seed 7's schedule
#   make judge LOCK=./mylock            your package, with the root lock's API
#   make judge LOCK=mutant:release-get-del  the root's lock with one mistake
#   make judge LOCK=hardened            a lock the judge knows (root, hardened, fair, redislock, ...)
#   make judge ONLY=stale-write         one property (ids: make judge ONLY=x lists them)
# Built into .services/bin and run from here, so that LOCK= and HTML= are
# paths from this folder. A value given to make goes to the judge as one
# argument, whatever it holds: $(value) keeps make from expanding it, and
# the quoting keeps the shell from reading it. Make exports what the
# command line sets into every recipe's environment, expanding it then,
# so a $(shell ...) in LOCK= would run even in `make help`: unexport.
JUDGE = .services/bin/judge
arg = '$(subst ','\'',$(value $1))'
# FILES as the shell's words, each quoted: a list, split where it has
# spaces, and nothing in a name runs.
files = $(foreach w,$(if $(filter command line,$(origin FILES)),$(value FILES),$(FILES)),'$(subst ','\'',$w)')
LOCK ?=
STEP ?=
SEED ?=
ONLY ?=
HTML ?=
unexport LOCK STEP SEED ONLY HTML ROOM LABEL ADDR FILES RACE JSON
judge-bin:
	@cd lab && $(GO) build -o ../$(JUDGE) ./cmd/judge

judge: up judge-bin ## judge a lock (LOCK=./pkg, mutant:NAME or a known one; STEP=lease|watchdog|fencing|faults|guards or 2|3|5; ONLY=id; SEED=n replays; HTML=page.html)
	@$(JUDGE) -root . $(if $(value LOCK),-lock $(call arg,LOCK)) $(if $(value STEP),-chapter $(call arg,STEP)) \
		$(if $(value ONLY),-only $(call arg,ONLY)) $(if $(value SEED),-seed $(call arg,SEED)) $(if $(value HTML),-html $(call arg,HTML))

judge-matrix: up judge-bin ## regenerate docs/judge.md's matrix: every lock, mutant and variant against every property and fault
	@$(JUDGE) -root . -seed 1 -matrix docs/judge.md

exercise: judge-bin ## turn step STEP's functions in lock/ into stubs with TODOs (STEP=2, 3 or 5); git restore lock/ brings them back
	@$(JUDGE) -root . -exercise $(call arg,STEP)
