# make demo: start Redis and PostgreSQL if needed, then run every step.
# make test: start them if needed, lint, then run the tests with -race
#   (cmd/drill's test runs a short drill: pause and restart, lock and fenced),
#   then scan Redis and PostgreSQL for test: keys and rows left behind.
# make drills: real processes, real faults (cmd/drill), short; SEEDS=20 for more.
# make cluster-up: a Redis Cluster (3 masters, 3 replicas) on 127.0.0.1:7001-7006
#   (CLUSTER_PORT=8001 for others); make test-cluster: the lock's tests and
#   short runs of steps 2, 5 and 6 on it, then the cluster is stopped.
# Services come from cmd/services: whatever already answers and lets us log
# in, else docker compose, else local redis-server and PostgreSQL binaries,
# installed first (apt-get or brew) when they are missing.
# make redlock-up: three independent Redis nodes for step 6's redlock
#   strategy (REDLOCK_ADDRS, default 127.0.0.1:6380,6381,6382), no
#   persistence. `make up` leaves them out; demo and workshop start them.

GO ?= go

.PHONY: help up compose-up down compose-down status redlock-up redlock-down demo lint test workshop compare drills \
	cluster-up cluster-down cluster-status test-cluster

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

# cmd/services, built into .services/bin only when one of its sources is
# newer, so that `make up` with everything running takes milliseconds
# rather than the second of a `go run`. SERVICES_PKGS is every package of
# lab/ it imports, ROOT_SERVICES_PKGS every package of the root
# (cmd/services's TestMakefile_listsEveryPackage keeps both so).
SERVICES = .services/bin/services
SERVICES_PKGS = cmd/services internal/services internal/launch wallet wallet/postgres
ROOT_SERVICES_PKGS = internal/safe
LAB_SERVICES_SRC = $(wildcard $(addprefix lab/,$(addsuffix /*,$(SERVICES_PKGS)))) $(wildcard $(addsuffix /*,$(ROOT_SERVICES_PKGS)))
$(SERVICES): go.mod lab/go.mod lab/go.sum $(LAB_SERVICES_SRC)
	@cd lab && $(GO) build -o ../$@ ./cmd/services

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

# staticcheck is a tool dependency of lab/go.mod, built once into
# .services/bin: the root's go.mod requires only the article's three modules.
STATICCHECK = .services/bin/staticcheck
$(STATICCHECK): lab/go.mod lab/go.sum
	@cd lab && $(GO) build -o ../$@ honnef.co/go/tools/cmd/staticcheck

lint: $(STATICCHECK) ## go vet, gofmt, staticcheck and go mod tidy -diff, in the root and in lab/
	$(GO) vet ./...
	cd lab && $(GO) vet ./...
	@out=$$(gofmt -l .); [ -z "$$out" ] || { echo "gofmt -l: these files need gofmt -w:"; echo "$$out"; exit 1; }
	$(STATICCHECK) ./...
	cd lab && ../$(STATICCHECK) ./...
	$(GO) mod tidy -diff
	cd lab && $(GO) mod tidy -diff

test: up lint ## make lint, then go test -race against the real services (the root's, then the lab's), then check that no test left a key or a row
	$(GO) test -race ./...
	cd lab && $(GO) test -race ./...
	cd lab && WALLETLOCK_LEFTOVERS=1 $(GO) test -count=1 -run '^TestNoLeftovers$$' .

workshop: up redlock-up ## run every step briefly, compare with the tutorial (JSON=1: also write workshop-<host>.json; LABEL=name)
	@cd lab && $(GO) run ./cmd/workshop $(if $(JSON),-save) $(if $(LABEL),-host '$(LABEL)')

# The facilitator's page: every collected workshop-*.json side by side.
FILES ?= $(wildcard workshop-*.json)
ROOM ?= room.html
compare: ## put the room's machines side by side in room.html (FILES="a.json b.json", ROOM=page.html)
	@cd lab && $(GO) run ./cmd/workshop -compare -html '$(abspath $(ROOM))' $(abspath $(FILES))

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

# The lock's tests and steps 2, 5 and 6, briefly, on a real cluster. A
# cluster this target started is stopped afterwards, pass or fail; one that
# was already up is left running.
test-cluster: up $(SERVICES) ## the lock's tests and short runs of steps 2, 5 and 6 on a cluster
	@kept=$$(test -f .services/cluster-$(CLUSTER_PORT).started && echo yes); \
	$(SERVICES) cluster-up || exit 1; \
	status=0; \
	export REDIS_URL= REDIS_ADDR='$(CLUSTER_ADDR)'; \
	echo "== go test -race ./lock/... ./internal/services on the cluster $$REDIS_ADDR" && \
	(cd lab && $(GO) test -race ./lock/... ./internal/services) && \
	echo "== step 2 on the cluster" && (cd lab && $(GO) run ./cmd/step2-lock) && \
	echo "== step 5 on the cluster" && (cd lab && $(GO) run ./cmd/step5-fencing) && \
	echo "== step 6 on the cluster" && (cd lab && $(GO) run ./cmd/step6-loadtest -duration 300ms -strategy lock,fair,fenced,atomic) \
	|| status=$$?; \
	[ -n "$$kept" ] || $(SERVICES) cluster-down; \
	exit $$status
