# The README's two commands: `make plan` and `make test`. Each creates the virtualenv on first use from the
# lock file (uv.lock), so a fresh machine needs only Python 3.11, 3.12 or 3.13 and the package index.
PYTHON ?= $(firstword $(foreach v,3.11 3.12 3.13,$(shell command -v python$(v) 2>/dev/null)) python3.11)
VENV := .venv
UV_VERSION := 0.13.8
STACK ?= dev
ARGS ?=
# Python caches the bytecode of this checkout (in __pycache__/, gitignored) even where the environment turns it off,
# as CI machines often do: otherwise every interpreter recompiles trainstack, and every pytest worker parses and
# rewrites every test module again (about 5 CPU-s per worker, and 1-2 per `python -m trainstack` process).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: plan test test-e2e test-fast checks typecheck suite lint promtool slurm-tools schema docs pack-facts generated bench mutate hyperpod-chart hyperpod-chart-fetch clean policy-venv workflows

# uv lives in its own small virtualenv so that `uv sync` can make .venv exactly the lock file (nothing
# installed by hand survives), and never downloads an interpreter: the lock pins Python 3.11. Bytecode is
# compiled once here: the Pulumi SDKs are large, and interpreters that may not write .pyc files (as in CI)
# would otherwise recompile them on every start.
$(VENV)/.synced: pyproject.toml uv.lock
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; trainstack needs Python 3.11, 3.12 or 3.13 (make PYTHON=/path/to/python3.12)" >&2; exit 2; }
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' || { echo "error: $(PYTHON) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'); trainstack needs 3.11, 3.12 or 3.13 (make PYTHON=/path/to/python3.12)" >&2; exit 2; }
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	UV_PROJECT_ENVIRONMENT=$(VENV) UV_PYTHON_DOWNLOADS=never .tools/bin/uv sync --frozen --quiet --compile-bytecode --python $(PYTHON)
	touch $@

# The policy pack's own virtualenv, as `pulumi preview --policy-pack policies` uses it (PulumiPolicy.yaml:
# toolchain pip, virtualenv .venv), made from the pack's requirements.txt with the same uv, bytecode compiled (every pack
# start would otherwise recompile pulumi and grpc where .pyc files may not be written).
POLICY_VENV := policies/.venv
$(POLICY_VENV)/.synced: policies/requirements.txt $(VENV)/.synced
	UV_PYTHON_DOWNLOADS=never .tools/bin/uv venv --quiet --allow-existing --python $(PYTHON) $(POLICY_VENV)
	UV_PYTHON_DOWNLOADS=never .tools/bin/uv pip install --quiet --compile-bytecode --python $(POLICY_VENV)/bin/python -r policies/requirements.txt
	touch $@

policy-venv: $(POLICY_VENV)/.synced ## The policy pack's virtualenv (policies/.venv) from policies/requirements.txt

plan: $(VENV)/.synced ## The offline plan of a stack (STACK=dev by default; ARGS="--format markdown" ...)
	$(VENV)/bin/python -m trainstack plan --stack $(STACK) $(ARGS)

# The diagram test renders Mermaid with the mermaid npm package (package-lock.json) in Debian's chromium.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The static checks and the alert rules' tests are single-threaded: two at a time (about 2 s off), then the suite.
test: $(VENV)/.synced $(POLICY_VENV)/.synced ## Lint, format, workflow and shell script checks, the import contracts, the type checker, the alert rules' unit tests, then every test but the e2e tier (about a minute on two cores: docs/testing.md)
	@$(MAKE) --no-print-directory -j2 --output-sync=target checks typecheck promtool
	@$(MAKE) --no-print-directory suite

# The e2e tier (docs/testing.md): every test that plans a stack of its own (the red-team corpus, day-2 edits,
# policy scenarios) or starts a new interpreter, the browser or the lifecycle scripts. CI runs it after `make test`.
test-e2e: $(VENV)/.synced $(POLICY_VENV)/.synced node_modules/.installed slurm-tools ## The e2e tier: edited stacks planned end to end, real processes, the browser, real Slurm
	$(VENV)/bin/python -m pytest -n 2 --dist worksteal -m e2e

# The quick checks (seconds): lint, format, workflows, shell scripts, the import contracts.
checks: $(VENV)/.synced
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.dependabot .github/dependabot.yml
	$(VENV)/bin/zizmor --offline --no-progress .github/workflows
	$(VENV)/bin/shellcheck --severity=style components/sagemaker/lifecycle/*/*.sh
	$(VENV)/bin/lint-imports --no-cache

# pyrefly, strict: the program, the tooling and scripts/ against .venv ([tool.pyrefly] in pyproject.toml), then
# the policy pack against the interpreter it runs with, policies/.venv (policies/pyrefly.toml): about 4 CPU-s.
typecheck: $(VENV)/.synced $(POLICY_VENV)/.synced
	$(VENV)/bin/pyrefly check
	$(VENV)/bin/pyrefly check --config policies/pyrefly.toml

suite: $(VENV)/.synced $(POLICY_VENV)/.synced
	$(VENV)/bin/python -m pytest -n 2 --dist worksteal -m "not e2e"

# The tests not marked slow (docs/testing.md): no whole-program run, no new interpreter; for the edit-test loop.
test-fast: $(VENV)/.synced
	$(VENV)/bin/python -m pytest -m "not slow"

# promtool comes with Debian's `prometheus` package (bookworm: 2.42); a fresh CI machine installs it once. Where
# there is no apt-get (macOS) or it cannot run, the message says how to get it.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PROMTOOL_HINT := promtool (Prometheus) is needed for the alert rules' tests: macOS \`brew install prometheus\`; Debian or Ubuntu \`sudo apt-get install prometheus\`; elsewhere the prometheus release archive from prometheus.io/download has it. Then run make test again
promtool: ## The alert rules (monitoring/rules.yaml) against their firing and non-firing cases
	@command -v promtool >/dev/null || { command -v apt-get >/dev/null && $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || { echo "error: $(PROMTOOL_HINT)" >&2; exit 2; }
	promtool check rules monitoring/rules.yaml
	promtool test rules monitoring/rules.test.yaml

# The Slurm lifecycle tests (tests/lifecycle/) run HyperPod nodes in boxes (namespaces and a chroot) against Debian's
# own Slurm daemons, munge and MariaDB, build a SPANK plugin with gcc and make against libslurm-dev, and use ip, gpg,
# ssh-keygen, setpriv and apt's tools; a fresh CI machine installs them once (bookworm: Slurm 22.05.8). Debian's
# policy-rc.d (or its absence on a systemd host) decides whether the packages start their system services: the
# tests use none of them, they start their own inside the boxes.
SLURM_TOOLS := slurmctld slurmd slurmdbd sbatch sacct sacctmgr munged mariadbd mariadb-install-db mysqldump gcc make \
	setpriv unshare nsenter ip ssh-keygen sshd apt-mark dpkg-deb gpg
slurm-tools: ## Debian's Slurm daemons and clients, munge, MariaDB, libslurm-dev, gcc and make (for the e2e tier)
	@for tool in $(SLURM_TOOLS); do command -v $$tool >/dev/null || missing=1; done; \
	[ -f /usr/include/slurm/spank.h ] || missing=1; \
	[ -z "$$missing" ] || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	  --no-install-recommends slurmctld slurmd slurmdbd slurm-client munge mariadb-server mariadb-client libslurm-dev \
	  gcc make libc6-dev util-linux iproute2 openssh-client openssh-server gpg >/dev/null; }

lint: checks typecheck ## The quick checks and the type checker, without the tests

schema: $(VENV)/.synced ## Regenerate stacks/cluster.schema.json for editors
	$(VENV)/bin/python -m trainstack schema --output stacks/cluster.schema.json

# The policy pack runs standalone and cannot import the program: the facts it shares with it (catalog, FSx
# throughput, tag and label keys) and the thresholds the stack files assume go into policies/ from their homes.
pack-facts: $(VENV)/.synced ## Regenerate policies/facts_generated.py and the stack thresholds in policies/config/*.json
	$(VENV)/bin/python scripts/pack_facts.py

docs: $(VENV)/.synced ## Regenerate docs/config.md (from the schema), the JSON field pages, the policy tables and the dev plan examples (README.md, docs/plan.md)
	$(VENV)/bin/python scripts/docs.py

# Every file generated from a home in the code, in dependency order: the pack's facts and thresholds, the editor
# schema, then the docs (which read both). Golden URNs (scripts/golden_urns.py) and the upstream contract facts
# (scripts/extract_contract_facts.py) are regenerated on purpose only: docs/extending.md says when.
generated: $(VENV)/.synced ## Regenerate every generated file (pack-facts, schema, docs), in that order
	@$(MAKE) --no-print-directory pack-facts
	@$(MAKE) --no-print-directory schema
	@$(MAKE) --no-print-directory docs

bench: $(VENV)/.synced ## Plan time: scaling with GPU groups, then the whole prod and dev plans (ARGS="--baseline DIR" to compare)
	@missed=0; \
	$(VENV)/bin/python bench/plan_scaling.py || missed=1; \
	$(VENV)/bin/python bench/prod_plan.py --stack prod $(ARGS) || missed=1; \
	$(VENV)/bin/python bench/prod_plan.py --stack dev $(ARGS) || missed=1; \
	if [ $$missed = 1 ]; then echo "bench: a target was missed (see above)" >&2; exit 1; fi

# Mutation testing of the modules in bench/mutation.toml (not part of `make test`): prints each module's score,
# rewrites bench/mutation-report.{md,json}, fails when a module is below the floor. ARGS="--module stacks/fsx_sizing.py"
# runs one module without touching the report.
mutate: $(VENV)/.synced $(POLICY_VENV)/.synced node_modules/.installed ## Mutation scores of the core modules against the floor
	$(VENV)/bin/python scripts/mutate.py $(ARGS)

# The HyperPod dependencies chart, at the tag components/sagemaker/hyperpod_dependencies.py pins, where the release looks for
# it (.hyperpod-chart/<tag>/). Needed before `pulumi up` on a stack with HyperPod on EKS; needs git and helm.
# With STACK=<name> (CI) it is fetched only when that stack runs HyperPod on EKS; HYPERPOD_CHART_MIRROR=<git URL>
# clones the same tag from a mirror (a runner without GitHub access; the day-one dry run's local repository).
hyperpod-chart: $(VENV)/.synced
	@if [ -n "$(filter command line environment,$(origin STACK))" ]; then \
	  code=0; $(VENV)/bin/python -c 'import sys; from stacks.load import load_file, stack_file; sys.exit(0 if load_file(stack_file(sys.argv[1])).hyperpod_on_eks else 3)' "$(STACK)" || code=$$?; \
	  if [ $$code = 3 ]; then echo "stack $(STACK) runs no HyperPod on EKS: no chart to fetch"; exit 0; elif [ $$code != 0 ]; then exit $$code; fi; \
	fi; $(MAKE) --no-print-directory hyperpod-chart-fetch

hyperpod-chart-fetch: $(VENV)/.synced
	@set -e; eval "$$($(VENV)/bin/python -c 'from components.sagemaker.hyperpod_dependencies import HYPERPOD_CLI_REPOSITORY as r, HYPERPOD_CLI_TAG as t, CHART_PATH as p; print(f"REPO={r} TAG={t} CHART={p}")')"; \
	rm -rf .hyperpod-chart/$$TAG; \
	git clone --quiet --depth 1 --branch $$TAG "$${HYPERPOD_CHART_MIRROR:-$$REPO}" .hyperpod-chart/$$TAG; \
	helm dependency update .hyperpod-chart/$$TAG/$$CHART

clean:
	rm -rf $(VENV) .tools $(POLICY_VENV)
