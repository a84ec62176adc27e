"""Generate ``cupel/data/demo_chat.jsonl``: an agent debugging a failed deployment, as an
OpenAI-style chat transcript (one message a line).

Deterministic (fixed seed, fixed start time): running it twice writes the same bytes.

    python scripts/make_demo_data.py            # writes cupel/data/demo_chat.jsonl
    python scripts/make_demo_data.py --check    # exit 1 if the shipped file is stale

The conversation: a user and an SRE assistant chase a Helm rollout of ``checkout-api``
v2.14.0 that lands in CrashLoopBackOff (a missing env var), then hits a migration lock,
then flaps on an aggressive readiness probe, and finally ships through a canary. Messages:
one system prompt (with memories from earlier sessions), user and assistant messages,
assistant messages calling tools (pod listings, logs, JSON, test runs, queries) each
answered by a ``tool`` message, and runbook chunks returned by a ``search_runbooks`` tool
(a few are retrieved twice, verbatim).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SEED = 20250314
START = datetime(2025, 3, 14, 9, 2, 0, tzinfo=timezone.utc)
OUT = Path(__file__).resolve().parents[1] / "cupel" / "data" / "demo_chat.jsonl"
NS = "shop-prod"
# What the assistant sometimes notes after a tool result (prefixed with the call id).
NOTES: dict[str, list[str]] = {
    "get_pods": [
        "restart counts still climbing on the new ReplicaSet",
        "old ReplicaSet unchanged, all ready",
        "pod states as expected",
    ],
    "logs": [
        "no new error signatures in this sample",
        "latencies mostly under 300ms",
        "a few slow requests, nothing systematic",
    ],
    "logs_previous": ["same ConfigError as the other pod", "exits right after config load"],
    "describe_pod": ["events confirm the failure mode", "no OOM, no mount errors"],
    "promql": [
        "both tracks returned",
        "numbers recorded for the comparison",
        "values within normal range",
    ],
    "psql_activity": ["long-running sessions counted", "all from checkout_app"],
    "helm_history": ["release history noted"],
    "run_tests": ["all green"],
    "read_file": ["relevant lines quoted in my reply"],
    "git_log": ["history narrowed to the relevant commits"],
    "get_hpa": ["utilisation below target"],
}
NOTE_PROBABILITY = 0.5

# A retriever returns the same chunk again in later turns, verbatim (dedup removes it).
MAX_RETRIEVALS = 2
# Read-only tools whose output changes between calls; the agent sometimes re-runs them.
POLLED = frozenset({"get_pods", "logs", "logs_previous", "describe_pod", "promql", "get_hpa"})
APP = "checkout-api"

SYSTEM_PROMPT = (
    "You are Relay, an SRE assistant with read access to the shop-prod Kubernetes cluster, "
    "the checkout-api repository, Prometheus and the orders Postgres replica. Investigate "
    "before acting: gather evidence with tools, quote the lines that matter, and state your "
    "confidence. Never run mutating commands (kubectl apply/delete, helm upgrade/rollback, "
    "SQL writes) without explicit user approval in the current turn. Prefer reversible "
    "changes, keep the user informed of blast radius, and summarise findings at the end of "
    "each turn in at most five bullet points."
)

MEMORIES = [
    (
        "The user (Dana, platform team) prefers kubectl commands with an explicit -n namespace "
        "and short summaries over long explanations.",
        "preference",
    ),
    (
        "checkout-api is deployed with Helm chart charts/checkout-api; values live in "
        "deploy/values-prod.yaml and secrets come from the external-secrets operator.",
        "infra",
    ),
    (
        "Team convention: every production rollout of checkout-api goes through a 10% canary "
        "for 15 minutes before full promotion.",
        "process",
    ),
    (
        "Previous incident (2024-11-03): a long-running migration held an ACCESS EXCLUSIVE lock "
        "on orders and blocked checkout for 12 minutes.",
        "incident",
    ),
    (
        "The orders database is Postgres 15 on RDS; the assistant only has access to the "
        "read replica orders-ro.",
        "infra",
    ),
    (
        "Dana asked to always check the Helm release history before proposing a rollback.",
        "preference",
    ),
    (
        "Payment gateway (Adyen) sandbox credentials rotate every 90 days; last rotation "
        "2025-02-27.",
        "infra",
    ),
]

DOCS: dict[str, list[str]] = {
    "runbook-crashloop": [
        "Runbook: CrashLoopBackOff triage (1/3). Start with `kubectl get pods -n <ns>` and "
        "note restart counts and ages. A pod restarting within seconds of start usually "
        "fails during configuration loading; one restarting after ~30-60s usually fails a "
        "liveness probe. Always capture `kubectl logs --previous` before the next restart "
        "overwrites it.",
        "Runbook: CrashLoopBackOff triage (2/3). Check `kubectl describe pod` events for "
        "OOMKilled, failed mounts and probe failures. Exit code 1 with a config error in the "
        "previous logs points at a missing or malformed environment variable; compare the "
        "rendered ConfigMap with the chart values of the previous release.",
        "Runbook: CrashLoopBackOff triage (3/3). If the previous ReplicaSet is still serving, "
        "the incident is a failed rollout, not an outage: pause the rollout "
        "(`kubectl rollout pause`) and investigate without time pressure. Roll back only "
        "after checking `helm history` for the last known-good revision.",
    ],
    "values-reference": [
        "checkout-api configuration reference: PAYMENT_GATEWAY_URL (required), "
        "PAYMENT_GATEWAY_TIMEOUT_MS (required since v2.14, integer milliseconds, no default), "
        "ORDERS_DB_DSN (required, from secret), ORDERS_DB_POOL_SIZE (default 20), "
        "FEATURE_SPLIT_TENDER (default false).",
        "checkout-api configuration reference: all env vars are rendered from "
        "`.Values.env` into the ConfigMap checkout-api-env. Secrets are referenced through "
        "`.Values.secretEnv` and materialised by external-secrets; a key missing from "
        "values renders no entry at all (no empty string), so the app sees it as unset.",
    ],
    "adr-017": [
        "ADR-017: Explicit payment gateway timeouts. Context: the client library's default "
        "timeout is 60s, which let stuck gateway calls exhaust the request pool during the "
        "January incident. Decision: from v2.14 checkout-api refuses to start unless "
        "PAYMENT_GATEWAY_TIMEOUT_MS is set. Recommended production value: 3500.",
        "ADR-017 (consequences): every environment's values file must define the timeout; "
        "the chart's values.schema.json was meant to enforce it but the schema change was "
        "split into a follow-up PR (#2291) that has not merged yet.",
    ],
    "migrations-guide": [
        "Running migrations safely: migrations run as a Helm pre-upgrade hook Job "
        "(checkout-api-migrate). Each migration sets `lock_timeout = '5s'` and retries up to "
        "3 times. Never add a column with a volatile default to orders in a single step.",
        "Running migrations safely: if the hook Job fails with `canceling statement due to "
        "lock timeout`, look for long-running transactions with pg_stat_activity on the "
        "primary; idle-in-transaction sessions from old pods are the usual culprit. The "
        "remedy is to drain old pods' connections, not to raise lock_timeout.",
    ],
    "probes-handbook": [
        "SRE handbook, probes: readiness decides whether a pod receives traffic; liveness "
        "decides whether it is restarted. Never point liveness at a dependency check. For "
        "JVM or warm-cache services use a startupProbe with failureThreshold * periodSeconds "
        "longer than the worst observed start time.",
        "SRE handbook, probes: a readiness probe with timeoutSeconds: 1 against an endpoint "
        "that checks the database will flap under load. Prefer a cheap /healthz/ready that "
        "reflects local state, and alert on dependency health separately.",
    ],
    "rollback-runbook": [
        "Runbook: rolling back a Helm release. `helm history <release> -n <ns>` lists "
        "revisions; `helm rollback <release> <rev> -n <ns> --wait` restores the manifests "
        "but NOT the database: a rollback across a migration needs the migration's down "
        "step or a forward fix.",
    ],
    "postmortem-2024-11": [
        "Postmortem 2024-11-03 (orders lock): migration 0031 added an index without "
        "CONCURRENTLY while a reporting query held a long transaction; checkout requests "
        "queued behind the ACCESS EXCLUSIVE lock for 12 minutes. Action items: "
        "lock_timeout in every migration, CONCURRENTLY for indexes, and a pre-flight check "
        "for transactions older than 60s.",
    ],
    "canary-guide": [
        "Canary guide: set `canary.weight: 10` in values, deploy, and watch the "
        "checkout-api-canary SLO dashboard for 15 minutes: error rate below 0.5%, p99 "
        "latency within 20% of the stable track. Promote with `canary.weight: 100`, then "
        "remove the canary block in a follow-up.",
    ],
}

SERVICES = [
    ("cart-api", "team-basket", 1, "redis cart-cache, postgres carts"),
    ("search-api", "team-discovery", 2, "opensearch products-v7"),
    ("inventory-api", "team-stock", 1, "postgres inventory, kafka stock-events"),
    ("notifications", "team-engage", 3, "sendgrid, kafka order-events"),
    ("recommendations", "team-discovery", 3, "feature-store, redis recs-cache"),
    ("auth-gateway", "team-identity", 1, "postgres identity, keycloak"),
    ("pricing-engine", "team-basket", 1, "postgres pricing, redis price-cache"),
    ("returns-api", "team-postsale", 2, "postgres returns, s3 return-labels"),
    ("shipping-quotes", "team-postsale", 2, "carrier APIs (DHL, UPS), redis quote-cache"),
    ("media-resizer", "team-web", 3, "s3 product-media, cloudfront"),
    ("loyalty-api", "team-engage", 2, "postgres loyalty, kafka order-events"),
    ("fraud-scoring", "team-risk", 1, "sagemaker endpoint fraud-v12, redis velocity"),
]


def _catalog_entry(name: str, team: str, tier: int, deps: str) -> str:
    return (
        f"Service catalog: {name} is owned by {team} (tier {tier}; on-call rotation "
        f"{team.split('-')[1]}-oncall). Dependencies: {deps}. Deploys via the standard Helm "
        f"pipeline with a {10 if tier == 1 else 25}% canary; runbooks live under "
        f"docs/runbooks/{name}/."
    )


# Chunks the retriever also returns although they barely matter (low relevance hints).
DISTRACTORS: list[tuple[str, str]] = [
    *((f"catalog-{svc[0]}", _catalog_entry(*svc)) for svc in SERVICES),
    (
        "redis-eviction",
        "Runbook: Redis eviction storms. When evicted_keys climbs and hit rate "
        "drops below 80%, check maxmemory-policy (allkeys-lru for caches) and look for a new "
        "key pattern without TTL. The cart service caches prices in Redis for 10 minutes.",
    ),
    (
        "kafka-lag",
        "Runbook: Kafka consumer lag. order-events consumers should stay under "
        "5,000 messages of lag. Scale the consumer group only up to the partition count (24); "
        "beyond that, extra consumers sit idle.",
    ),
    (
        "tls-renewal",
        "Runbook: TLS certificate renewal. cert-manager renews 30 days before "
        "expiry; a Certificate stuck in Issuing usually means the HTTP-01 solver ingress is "
        "blocked by a NetworkPolicy.",
    ),
    (
        "node-drain",
        "Node maintenance: cordon, then drain with --ignore-daemonsets "
        "--delete-emptydir-data. PodDisruptionBudgets for checkout-api allow 1 unavailable pod; "
        "drains of nodes hosting 2 replicas will wait.",
    ),
    (
        "oncall-handbook",
        "On-call handbook: acknowledge pages within 5 minutes, open an "
        "incident channel for anything customer-facing, and name an incident commander when "
        "more than two people are involved.",
    ),
    (
        "image-policy",
        "Image policy: production images must be signed (cosign) and scanned "
        "by trivy with no critical CVEs. Kyverno rejects unsigned images in shop-prod.",
    ),
    (
        "pg-vacuum",
        "Postgres maintenance: autovacuum on orders runs with "
        "autovacuum_vacuum_scale_factor 0.02. A table bloat alert above 30% warrants a manual "
        "VACUUM (VERBOSE) during low traffic, never VACUUM FULL in business hours.",
    ),
    (
        "feature-flags",
        "Feature flags are stored in the feature_flags table and cached for "
        "60s per pod. Changing a flag does not need a deploy; flags are read at startup and "
        "refreshed in the background.",
    ),
    (
        "ingress-timeouts",
        "Ingress defaults: nginx proxy-read-timeout 30s, proxy-body-size "
        "8m. Checkout endpoints override the read timeout to 15s through the "
        "nginx.ingress.kubernetes.io/proxy-read-timeout annotation.",
    ),
    (
        "sli-definitions",
        "SLI definitions: checkout availability counts 5xx responses and "
        "requests slower than 2s as bad events; the SLO is 99.9% over 28 days, leaving about "
        "40 minutes of error budget.",
    ),
    (
        "secrets-rotation",
        "Secret rotation: external-secrets refreshes every hour. After "
        "rotating a database password, restart pods only after the new secret version shows "
        "in `kubectl get externalsecret -n shop-prod`.",
    ),
    (
        "logging-standards",
        "Logging standards: JSON logs with ts, level, logger, msg and "
        "request id; never log card data or full customer emails. Sampling at 10% applies to "
        "INFO access logs only.",
    ),
]

# Each turn: (user message, [(tool, args)], [doc chunk ids], assistant plan, assistant reply).
Turn = tuple[str, list[tuple[str, str]], list[str], str, str]
TURNS: list[Turn] = [
    (
        "The checkout-api deploy to prod (v2.14.0) went red about ten minutes ago. Pods keep "
        "restarting. Can you take a look?",
        [("get_pods", ""), ("get_pods", "-l app=checkout-api -o wide"), ("helm_history", "")],
        ["runbook-crashloop:0", "rollback-runbook:0"],
        "Starting with the pod list and the Helm history to see how far the rollout got.",
        "The new ReplicaSet's 3 pods are in CrashLoopBackOff after 4-6 restarts each; the "
        "old ReplicaSet (v2.13.2) still serves traffic with 6/6 ready, so customers are not "
        "affected yet. Helm shows revision 48 (v2.14.0) as pending-upgrade.",
    ),
    (
        "Good to know it's not an outage. What do the logs say?",
        [("logs_previous", "crash"), ("logs_previous", "crash"), ("describe_pod", "crash")],
        ["runbook-crashloop:1"],
        "Pulling the previous container logs before the next restart overwrites them.",
        "All three pods exit with code 1 within 2 seconds: `ConfigError: "
        "PAYMENT_GATEWAY_TIMEOUT_MS is required but not set`. No OOM or mount problems in "
        "the events; the probes never get a chance to run.",
    ),
    (
        "That variable is new, right? Where should it come from?",
        [
            ("grep_repo", "PAYMENT_GATEWAY_TIMEOUT_MS"),
            ("git_log", "config"),
            ("read_file", "deploy/values-prod.yaml"),
        ],
        ["values-reference:0", "adr-017:0", "values-reference:1"],
        "Searching the repo and the chart values for the variable.",
        "Yes: ADR-017 made it mandatory in v2.14 (commit 9f3c2ab). values-staging.yaml sets "
        "it to 3500, but values-prod.yaml was never updated, so the prod ConfigMap renders "
        "no entry at all. The schema check that would have caught this is still in PR #2291.",
    ),
    (
        "Ugh. Can you show me the diff between the staging and prod values for env?",
        [("diff_values", ""), ("render_configmap", "")],
        ["adr-017:1"],
        "Diffing the env blocks of both values files and rendering the prod ConfigMap.",
        "Only PAYMENT_GATEWAY_TIMEOUT_MS differs in a way that matters; FEATURE_SPLIT_TENDER "
        "is intentionally true in staging only. Proposed fix: add "
        '`PAYMENT_GATEWAY_TIMEOUT_MS: "3500"` to values-prod.yaml env.',
    ),
    (
        "Approved. Add it and open a PR, I'll merge. Don't run helm yet.",
        [("git_show", "fix"), ("run_tests", "chart"), ("ci_status", "")],
        [],
        "Committing the values change on a branch and running the chart tests locally.",
        "PR #2297 adds the timeout to values-prod.yaml; `helm lint` and the chart unit tests "
        "pass (41 passed). CI is green. Nothing has been applied to the cluster.",
    ),
    (
        "Merged. Now run the upgrade with the fixed values, please.",
        [("helm_upgrade", ""), ("get_pods", ""), ("migrate_job", "fail")],
        ["migrations-guide:0"],
        "Running `helm upgrade --install checkout-api charts/checkout-api -n shop-prod "
        "-f deploy/values-prod.yaml --wait --timeout 10m` as approved.",
        "The upgrade failed in the pre-upgrade hook: the migration Job checkout-api-migrate "
        "hit `canceling statement due to lock timeout` three times on migration 0042 "
        "(ALTER TABLE orders ADD COLUMN tender_split jsonb). The app pods were not touched.",
    ),
    (
        "Lock timeout on orders again? That's the November thing all over.",
        [("psql_activity", ""), ("psql_locks", ""), ("logs_migrate", "")],
        ["migrations-guide:1", "postmortem-2024-11:0"],
        "Checking pg_stat_activity and pg_locks on the replica for long transactions.",
        "Similar symptom, different cause: 14 sessions from the crash-looping v2.14 pods "
        "are `idle in transaction` for 9-11 minutes. The app opens a transaction to read "
        "feature flags before validating config, and the crash leaves the connection "
        "dangling until the server-side idle timeout (15 min).",
    ),
    (
        "So the broken pods are blocking the migration that would fix them. Nice. Options?",
        [("get_rs", ""), ("psql_activity", "filter")],
        ["runbook-crashloop:2", "migrations-guide:1"],
        "Checking which ReplicaSet owns those sessions before suggesting anything.",
        "Scale the failed v2.14 ReplicaSet to 0 (it serves no traffic) so its sessions "
        "close, then re-run the upgrade. Raising lock_timeout is not recommended. Blast "
        "radius: none for customers; v2.13.2 keeps serving.",
    ),
    (
        "Do it. Scale the bad RS down and retry the upgrade.",
        [("scale_rs", ""), ("psql_activity", "clear"), ("helm_upgrade", ""), ("migrate_job", "ok")],
        [],
        "Scaling ReplicaSet checkout-api-7d9f8c6b5 to 0, waiting for the sessions to drop, "
        "then retrying.",
        "Sessions dropped to 0 within 20s. Migration 0042 applied in 1.8s and the upgrade "
        "proceeded. New pods are starting now.",
    ),
    (
        "Pods look up but some are flapping between ready and not ready?",
        [("get_pods", "flap"), ("describe_pod", "probe"), ("logs", "ready")],
        ["probes-handbook:0", "probes-handbook:1"],
        "Looking at the readiness events and the /healthz/ready latency.",
        "Readiness fails intermittently: the probe has timeoutSeconds: 1 and "
        "/healthz/ready runs a `SELECT 1` plus a gateway ping, whose p95 is 1.3s during "
        "warm-up. Liveness is fine. This matches the handbook's flapping pattern.",
    ),
    (
        "Is that new in 2.14 too?",
        [("git_log", "probes"), ("git_show", "probes"), ("promql", "ready_latency")],
        ["probes-handbook:1"],
        "Checking when the readiness handler gained the gateway ping.",
        "Yes, commit 4be1d07 added the gateway ping to readiness in v2.14. p95 of the "
        "readiness handler went from 40ms (v2.13) to 1.1-1.4s. The gateway sandbox is slow "
        "from our region at the moment.",
    ),
    (
        "Let's not block on the gateway in readiness. What's the smallest change?",
        [("read_file", "app/health.py"), ("run_tests", "health"), ("git_show", "health_fix")],
        ["probes-handbook:1", "adr-017:0"],
        "Reading the health module and the tests around it.",
        "Smallest change: keep the gateway ping in a separate /healthz/deps endpoint (for "
        "dashboards) and make readiness check only the DB pool. Patch is 14 lines plus a "
        "test; the health test suite passes (12 passed).",
    ),
    (
        "Ship it as 2.14.1 through the usual canary.",
        [("ci_status", "2.14.1"), ("helm_upgrade", "canary"), ("get_pods", "canary")],
        ["canary-guide:0"],
        "Waiting for CI on the tag, then deploying 2.14.1 with canary.weight: 10.",
        "v2.14.1 is built and deployed as a 10% canary (2 pods). Both are ready and have "
        "stayed ready for 3 minutes; no restarts.",
    ),
    (
        "How's the canary doing vs stable?",
        [("promql", "error_rate"), ("promql", "p99"), ("logs", "canary")],
        ["canary-guide:0"],
        "Querying error rate and latency for both tracks.",
        "After 15 minutes: canary error rate 0.21% vs stable 0.19%; p99 412ms vs 398ms "
        "(+3.5%, within the 20% budget). No new error signatures in the canary logs.",
    ),
    (
        "Any payment errors specifically? That's what the timeout change touches.",
        [("logs", "payments"), ("promql", "gateway_timeouts"), ("psql_orders", "")],
        ["adr-017:0"],
        "Looking at gateway call outcomes on the canary.",
        "Gateway calls on the canary: 2,914 succeeded, 3 timed out at 3500ms (0.1%), all "
        "retried successfully. Stable track saw 0 timeouts but has a 60s client timeout, so "
        "its slow calls are hidden rather than absent.",
    ),
    (
        "OK, promote to 100%.",
        [("helm_upgrade", "promote"), ("get_pods", "done"), ("helm_history", "done")],
        ["canary-guide:0"],
        "Promoting with canary.weight: 100 as approved.",
        "Promoted: 6/6 pods on v2.14.1, old ReplicaSet scaled to 0, Helm revision 51 is "
        "deployed. Error rate and latency unchanged over the first 5 minutes.",
    ),
    (
        "Great. Can you double check nothing is still holding locks on orders?",
        [("psql_activity", "clear"), ("psql_locks", "clear")],
        ["migrations-guide:1"],
        "Re-checking long transactions and locks on orders.",
        "No transactions older than 5s, no waiting locks on orders. The idle-in-transaction "
        "sessions are gone.",
    ),
    (
        "Why did the crash leave transactions open in the first place? That seems bad.",
        [("read_file", "app/bootstrap.py"), ("grep_repo", "begin()")],
        ["migrations-guide:1"],
        "Reading the bootstrap order.",
        "bootstrap.py loads feature flags inside `db.begin()` before `Settings.validate()`; "
        "when validation raises, the process exits without rolling back and the server "
        "keeps the session until idle_in_transaction_session_timeout (15 min). Fix: "
        "validate settings before touching the database and set the timeout to 60s.",
    ),
    (
        "Write that up as follow-ups. And the schema PR should merge too.",
        [("gh_pr", "2291"), ("run_tests", "schema")],
        ["adr-017:1", "postmortem-2024-11:0"],
        "Checking PR #2291 and its tests.",
        "Follow-ups drafted: (1) validate settings before DB access, (2) "
        "idle_in_transaction_session_timeout 60s on the app role, (3) merge #2291 "
        "(values.schema.json requires PAYMENT_GATEWAY_TIMEOUT_MS; tests pass after a "
        "rebase), (4) readiness must not call external dependencies (lint rule).",
    ),
    (
        "Thanks. Summarise the incident for the channel, five bullets max.",
        [("helm_history", "done"), ("promql", "error_rate")],
        ["runbook-crashloop:0"],
        "Collecting the final numbers.",
        "- v2.14.0 crash-looped: PAYMENT_GATEWAY_TIMEOUT_MS missing from prod values (no "
        "customer impact; v2.13.2 kept serving).\n- Fix re-run blocked by migration 0042 "
        "lock timeouts: dead pods held idle transactions; scaled their RS to 0.\n- v2.14.0 "
        "readiness flapped (gateway ping, 1s timeout); v2.14.1 moves the ping out of "
        "readiness.\n- v2.14.1 canaried 15 min, promoted; metrics nominal.\n- Follow-ups: "
        "config validation order, idle-tx timeout, schema PR #2291, probe lint.",
    ),
    (
        "One more: the nightly payment reconciliation job runs against checkout-api. Will it "
        "cope with 2.14.1?",
        [("get_cronjob", ""), ("logs", "reconcile"), ("read_file", "deploy/values-prod.yaml")],
        ["adr-017:0"],
        "Looking at the reconcile CronJob and its last runs.",
        "The reconcile CronJob calls /v1/payments/capture in batches of 50 with its own 30s "
        "client timeout; with the 3.5s gateway timeout, slow captures now fail fast and are "
        "retried by the job's next batch. Last night's run (on v2.13.2) took 14 minutes; "
        "expect similar.",
    ),
    (
        "Check the HPA too, we changed resource requests in 2.14.",
        [("get_hpa", ""), ("promql", "cpu"), ("get_pods", "done")],
        ["probes-handbook:0"],
        "Comparing the HPA targets with current utilisation.",
        "HPA targets 65% CPU with min 6 / max 18 replicas. v2.14 lowered requests from 500m "
        "to 400m, so the same load reads as ~25% higher utilisation: currently 48%, well "
        "below target. No action needed, but peak traffic on Saturday may scale to ~10 pods.",
    ),
    (
        "Draft the bootstrap fix PR so validation happens before any DB access.",
        [
            ("read_file", "app/bootstrap.py"),
            ("git_show", "bootstrap_fix"),
            ("run_tests", "bootstrap"),
        ],
        ["migrations-guide:1"],
        "Reordering bootstrap and adding a regression test.",
        "PR #2301: `Settings.from_env()` and `validate()` now run before `connect()`; flags "
        "load in a read-only autocommit session. New test asserts no connection is opened "
        "when validation fails. 18 tests pass.",
    ),
    (
        "Set the idle-in-transaction timeout for the app role as well — just prepare the SQL, "
        "I'll run it.",
        [("psql_settings", "")],
        ["postmortem-2024-11:0"],
        "Checking the current role settings on the replica.",
        "Current: idle_in_transaction_session_timeout = 15min (database default). Prepared: "
        "`ALTER ROLE checkout_app SET idle_in_transaction_session_timeout = '60s';` It only "
        "affects new sessions; rolling the pods afterwards applies it everywhere.",
    ),
    (
        "Is staging still in line with prod now? I don't want the values files drifting again.",
        [("diff_values", ""), ("render_configmap", "")],
        ["values-reference:1"],
        "Diffing the env blocks again after the fix.",
        "Staging and prod now differ only where intended: gateway URL (test vs live), "
        "FEATURE_SPLIT_TENDER (true in staging) and the pool size. Both define "
        "PAYMENT_GATEWAY_TIMEOUT_MS=3500.",
    ),
    (
        "How much error budget did we burn today?",
        [("promql", "error_rate"), ("promql", "p99")],
        [],
        "Summing the bad events for the incident window.",
        "Roughly 3 minutes of the 40-minute monthly budget: the crash-looping pods never "
        "received traffic, so only the readiness flapping on v2.14.0 (about 25 minutes of "
        "intermittent 503s on one pod behind the load balancer) counted.",
    ),
    (
        "Turn the follow-ups into a ticket draft I can paste into Jira.",
        [],
        ["adr-017:1"],
        "Drafting the ticket from the follow-ups list.",
        "Title: checkout-api 2.14 rollout follow-ups. Tasks: (1) validate settings before DB "
        "access (PR #2301), (2) idle_in_transaction_session_timeout=60s for checkout_app, "
        "(3) merge values.schema.json PR #2291 after rebase, (4) lint rule: readiness must "
        "not call external services, (5) add PAYMENT_GATEWAY_TIMEOUT_MS to the prod values "
        "review checklist.",
    ),
    (
        "Who should own the schema PR? jlee approved it but it's conflicting now.",
        [("gh_pr", "2291"), ("git_log", "config")],
        [],
        "Checking the PR author and recent activity.",
        "priya.s opened #2291 and has the most context; the conflict is in values-dev.yaml "
        "only (a one-line rebase). Suggest asking her to rebase today so it lands before "
        "the next release train.",
    ),
    (
        "Last check before I sign off: anything unusual in the last hour?",
        [("promql", "error_rate"), ("promql", "p99"), ("logs", "payments"), ("get_pods", "done")],
        ["canary-guide:0"],
        "Scanning the last hour of metrics and logs.",
        "Nothing unusual: error rate 0.18%, p99 401ms, 6/6 pods ready with 0 restarts since "
        "promotion, 2 gateway timeouts in the hour (both retried). Handing back with the "
        "follow-ups list from earlier.",
    ),
]


class Gen:
    """Builds the messages from a seeded RNG (the clock only drives the tool outputs)."""

    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.now = START
        self.messages: list[dict[str, Any]] = []
        self.calls = 0
        self.new_rs = "7d9f8c6b5"
        self.old_rs = "5c8b7f4d2"
        self.scaled = False

    def tick(self, lo: int, hi: int) -> datetime:
        self.now += timedelta(seconds=self.rng.randint(lo, hi))
        return self.now

    def pod(self, rs: str | None = None) -> str:
        suffix = "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        return f"{APP}-{rs or self.new_rs}-{suffix}"

    def say(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content})

    def call(self, name: str, arguments: dict[str, str], output: str) -> str:
        """An assistant message calling ``name``, and the tool message answering it."""
        self.calls += 1
        call_id = f"call_{self.calls:04d}"
        function = {"name": name, "arguments": json.dumps(arguments)}
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        return call_id

    # -- tool outputs ---------------------------------------------------------------------
    def stamp(self) -> str:
        return (self.now - timedelta(seconds=self.rng.randint(0, 50))).strftime(
            "%Y-%m-%dT%H:%M:%S.%f"
        )[:-3] + "Z"

    def get_pods(self, arg: str) -> str:
        wide = arg.startswith("-")
        state = "" if wide else arg
        ready, status = {
            "": ("0/1", "CrashLoopBackOff"),
            "flap": ("0/1", "Running"),
            "canary": ("1/1", "Running"),
            "done": ("1/1", "Running"),
        }[state]
        old = 0 if state == "done" else 6
        pods = [(self.pod(self.old_rs), "1/1", "Running", 0, "6d") for _ in range(old)]
        for i in range({"canary": 2, "done": 6}.get(state, 3)):
            restarts = self.rng.randint(4, 7) if status == "CrashLoopBackOff" else 0
            row_ready = "1/1" if state == "flap" and i == 0 else ready
            pods.append((self.pod(), row_ready, status, restarts, f"{self.rng.randint(3, 14)}m"))
        rows = ["NAME                               READY   STATUS             RESTARTS   AGE"]
        for name, r, st, restarts, age in pods:
            row = f"{name:<34} {r:<7} {st:<18} {restarts:<10} {age}"
            if wide:
                row += f"   ip-10-4-{self.rng.randint(1, 254)}-{self.rng.randint(1, 254)}.internal"
            rows.append(row)
        if wide:
            rows[0] += "   NODE"
        suffix = f" {arg}" if wide else ""
        return f"$ kubectl get pods -n {NS}{suffix}\n" + "\n".join(rows)

    def helm_history(self, arg: str) -> str:
        rows = [
            "REVISION  UPDATED                   STATUS           CHART                 "
            "APP VERSION  DESCRIPTION"
        ]
        revs = [
            (45, "superseded", "2.13.0"),
            (46, "superseded", "2.13.1"),
            (47, "deployed" if arg != "done" else "superseded", "2.13.2"),
        ]
        if arg == "done":
            revs += [
                (48, "failed", "2.14.0"),
                (49, "failed", "2.14.0"),
                (50, "superseded", "2.14.1"),
                (51, "deployed", "2.14.1"),
            ]
        else:
            revs += [(48, "pending-upgrade", "2.14.0")]
        for rev, status, version in revs:
            day = 3 + rev - 45
            rows.append(
                f"{rev:<9} Fri Mar {day:>2} 1{rev % 10}:0{rev % 6}:11 2025  {status:<16} "
                f"checkout-api-{version}  {version:<12} Upgrade complete"
            )
        return f"$ helm history {APP} -n {NS}\n" + "\n".join(rows)

    def logs_previous(self, arg: str) -> str:
        pod = self.pod()
        lines = [
            f"{self.stamp()} INFO  checkout_api.bootstrap starting checkout-api 2.14.0 "
            f"(git 9f3c2ab) pid=1",
            f"{self.stamp()} INFO  checkout_api.db connected to orders-rw pool_size=20",
            f"{self.stamp()} INFO  checkout_api.flags loaded 37 feature flags (split_tender=false)",
            f"{self.stamp()} ERROR checkout_api.bootstrap configuration invalid",
            "Traceback (most recent call last):",
            '  File "/app/checkout_api/bootstrap.py", line 88, in main',
            "    settings.validate()",
            '  File "/app/checkout_api/settings.py", line 141, in validate',
            '    raise ConfigError(f"{name} is required but not set")',
            "checkout_api.settings.ConfigError: PAYMENT_GATEWAY_TIMEOUT_MS is required but not set",
            f"{self.stamp()} INFO  checkout_api.bootstrap exiting with status 1",
        ]
        return f"$ kubectl logs {pod} -n {NS} --previous\n" + "\n".join(lines)

    def describe_pod(self, arg: str) -> str:
        pod = self.pod()
        events = {
            "crash": [
                ("Normal", "Scheduled", "Successfully assigned shop-prod/" + pod),
                (
                    "Normal",
                    "Pulled",
                    'Container image "registry.internal/checkout-api:2.14.0" '
                    "already present on machine",
                ),
                ("Normal", "Started", "Started container checkout-api"),
                ("Warning", "BackOff", "Back-off restarting failed container checkout-api"),
            ],
            "probe": [
                ("Normal", "Started", "Started container checkout-api"),
                (
                    "Warning",
                    "Unhealthy",
                    "Readiness probe failed: Get "
                    '"http://10.4.7.19:8080/healthz/ready": context deadline exceeded '
                    "(Client.Timeout exceeded while awaiting headers)",
                ),
                (
                    "Warning",
                    "Unhealthy",
                    "Readiness probe failed: HTTP probe failed with statuscode: 503",
                ),
            ],
        }[arg]
        lines = [
            f"Name:         {pod}",
            f"Namespace:    {NS}",
            "Containers:",
            "  checkout-api:",
            "    Image:          registry.internal/checkout-api:2.14.0",
            "    Last State:     Terminated" if arg == "crash" else "    State:          Running",
            "      Reason:       Error" if arg == "crash" else "      Started:      just now",
            "      Exit Code:    1" if arg == "crash" else "    Ready:          False",
            "    Liveness:   http-get http://:8080/healthz/live delay=10s timeout=2s period=10s",
            "    Readiness:  http-get http://:8080/healthz/ready delay=5s timeout=1s period=5s",
            "Events:",
            "  Type     Reason     Age   From     Message",
        ]
        for kind, reason, msg in events:
            lines.append(f"  {kind:<8} {reason:<10} {self.rng.randint(5, 300)}s  kubelet  {msg}")
        return f"$ kubectl describe pod {pod} -n {NS}\n" + "\n".join(lines)

    def grep_repo(self, arg: str) -> str:
        hits = {
            "PAYMENT_GATEWAY_TIMEOUT_MS": [
                "checkout_api/settings.py:57:    payment_gateway_timeout_ms: int = "
                'env_required("PAYMENT_GATEWAY_TIMEOUT_MS")',
                'deploy/values-staging.yaml:31:    PAYMENT_GATEWAY_TIMEOUT_MS: "3500"',
                'deploy/values-dev.yaml:29:    PAYMENT_GATEWAY_TIMEOUT_MS: "5000"',
                "docs/adr/017-payment-timeouts.md:12:from v2.14 checkout-api refuses to start "
                "unless PAYMENT_GATEWAY_TIMEOUT_MS is set",
                'tests/test_settings.py:88:    monkeypatch.delenv("PAYMENT_GATEWAY_TIMEOUT_MS")',
            ],
            "begin()": [
                "checkout_api/bootstrap.py:71:    with db.begin() as tx:",
                "checkout_api/bootstrap.py:72:        flags = load_flags(tx)",
                "checkout_api/orders/repo.py:40:        with self.db.begin() as tx:",
                "checkout_api/flags.py:22:def load_flags(tx: Transaction) -> FlagSet:",
            ],
        }[arg]
        return f"$ rg -n '{arg}'\n" + "\n".join(hits)

    def git_log(self, arg: str) -> str:
        commits = {
            "config": [
                ("9f3c2ab", "Require explicit payment gateway timeout (ADR-017)"),
                ("e71b0c4", "values-staging: set PAYMENT_GATEWAY_TIMEOUT_MS=3500"),
                ("1aa93fe", "Bump adyen-client to 9.2.0"),
                ("c0de511", "Add split tender feature flag"),
            ],
            "probes": [
                ("4be1d07", "health: include payment gateway reachability in readiness"),
                ("9f3c2ab", "Require explicit payment gateway timeout (ADR-017)"),
                ("77d2e90", "health: expose pool stats on /healthz/ready"),
            ],
        }[arg]
        lines = []
        for sha, msg in commits:
            lines.append(
                f"{sha} {msg} ({self.rng.choice(['mkovac', 'jlee', 'priya.s'])}, "
                f"{self.rng.randint(2, 19)} days ago)"
            )
        return (
            "$ git log --oneline -n 20 -- "
            + {"config": "checkout_api/settings.py deploy/", "probes": "checkout_api/health.py"}[
                arg
            ]
            + "\n"
            + "\n".join(lines)
        )

    def read_file(self, arg: str) -> str:
        files = {
            "deploy/values-prod.yaml": (
                "replicaCount: 6\nimage:\n  repository: registry.internal/checkout-api\n"
                "  tag: 2.14.0\nenv:\n  PAYMENT_GATEWAY_URL: https://checkout-live.adyen.com\n"
                '  ORDERS_DB_POOL_SIZE: "20"\n  FEATURE_SPLIT_TENDER: "false"\n'
                "secretEnv:\n  ORDERS_DB_DSN: orders-db-dsn\n  ADYEN_API_KEY: adyen-api-key\n"
                "probes:\n  readiness:\n    path: /healthz/ready\n    timeoutSeconds: 1\n"
                "    periodSeconds: 5\n  liveness:\n    path: /healthz/live\n"
                "    timeoutSeconds: 2\n"
            ),
            "app/health.py": (
                '@router.get("/healthz/live")\nasync def live() -> dict[str, str]:\n'
                '    return {"status": "ok"}\n\n\n@router.get("/healthz/ready")\n'
                "async def ready(db: Pool = Depends(pool), gw: Gateway = Depends(gateway)):\n"
                '    await db.fetchval("SELECT 1")\n    await gw.ping()  # added in 4be1d07\n'
                '    return {"status": "ready", "pool": db.stats()}\n'
            ),
            "app/bootstrap.py": (
                "def main() -> None:\n    configure_logging()\n"
                '    db = connect(env("ORDERS_DB_DSN"))\n'
                "    with db.begin() as tx:\n        flags = load_flags(tx)\n"
                "        settings = Settings.from_env(flags)\n"
                "        settings.validate()  # raises ConfigError -> sys.exit(1), tx never "
                "closed\n    serve(settings, db)\n"
            ),
        }
        return f"$ cat {arg}\n{files[arg]}"

    def diff_values(self, arg: str) -> str:
        return (
            "$ diff <(yq .env deploy/values-staging.yaml) <(yq .env deploy/values-prod.yaml)\n"
            "< PAYMENT_GATEWAY_URL: https://checkout-test.adyen.com\n"
            "> PAYMENT_GATEWAY_URL: https://checkout-live.adyen.com\n"
            '< PAYMENT_GATEWAY_TIMEOUT_MS: "3500"\n'
            '< FEATURE_SPLIT_TENDER: "true"\n> FEATURE_SPLIT_TENDER: "false"\n'
            '< ORDERS_DB_POOL_SIZE: "10"\n> ORDERS_DB_POOL_SIZE: "20"'
        )

    def render_configmap(self, arg: str) -> str:
        data = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "checkout-api-env", "namespace": NS},
            "data": {
                "PAYMENT_GATEWAY_URL": "https://checkout-live.adyen.com",
                "ORDERS_DB_POOL_SIZE": "20",
                "FEATURE_SPLIT_TENDER": "false",
            },
        }
        return (
            "$ helm template checkout-api charts/checkout-api -f deploy/values-prod.yaml "
            "-s templates/configmap.yaml -o json\n" + json.dumps(data, indent=2)
        )

    def git_show(self, arg: str) -> str:
        bodies = {
            "fix": "commit 3d0e8a1 (fix/prod-gateway-timeout)\n    values-prod: set "
            "PAYMENT_GATEWAY_TIMEOUT_MS=3500 (ADR-017)\n\n--- a/deploy/values-prod.yaml"
            "\n+++ b/deploy/values-prod.yaml\n@@ -6,6 +6,7 @@ env:\n   PAYMENT_GATEWAY_URL:"
            ' https://checkout-live.adyen.com\n+  PAYMENT_GATEWAY_TIMEOUT_MS: "3500"\n'
            '   ORDERS_DB_POOL_SIZE: "20"',
            "probes": "commit 4be1d07\n    health: include payment gateway reachability in "
            "readiness\n\n--- a/checkout_api/health.py\n+++ b/checkout_api/health.py"
            '\n@@ -14,4 +14,5 @@\n     await db.fetchval("SELECT 1")\n+    await '
            'gw.ping()\n     return {"status": "ready"}',
            "bootstrap_fix": "commit 0c91e7d (fix/validate-before-db)\n    bootstrap: validate "
            "settings before connecting; flags via autocommit session\n\n"
            " checkout_api/bootstrap.py    | 19 ++++++++++---------\n"
            " checkout_api/flags.py        |  6 ++++--\n"
            " tests/test_bootstrap.py      | 28 ++++++++++++++++++++++++++++\n"
            " 3 files changed, 43 insertions(+), 10 deletions(-)",
            "health_fix": "commit b52f9c3 (fix/readiness-no-gateway)\n    health: move gateway "
            "ping to /healthz/deps; readiness checks local pool only\n\n"
            " checkout_api/health.py       | 11 +++++++----\n"
            " tests/test_health.py         | 17 +++++++++++++++\n"
            " 2 files changed, 24 insertions(+), 4 deletions(-)",
        }
        return f"$ git show --stat {arg}\n{bodies[arg]}"

    def run_tests(self, arg: str) -> str:
        counts = {"chart": 41, "health": 12, "schema": 9, "bootstrap": 18}[arg]
        lines = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.12.2, pytest-8.1.1, pluggy-1.4.0",
            f"collected {counts} items",
            "",
        ]
        names = {
            "chart": ["tests/chart/test_render.py", "tests/chart/test_values.py"],
            "health": ["tests/test_health.py"],
            "schema": ["tests/chart/test_schema.py"],
            "bootstrap": ["tests/test_bootstrap.py", "tests/test_settings.py"],
        }[arg]
        for name in names:
            lines.append(
                f"{name} " + "." * (counts // len(names)) + f" [{self.rng.randint(40, 100)}%]"
            )
        secs = self.rng.uniform(0.8, 6.0)
        lines.append(
            f"============================== {counts} passed in {secs:.2f}s "
            "==============================="
        )
        return f"$ pytest -q {' '.join(names)}\n" + "\n".join(lines)

    def ci_status(self, arg: str) -> str:
        checks = [
            {
                "name": name,
                "status": "completed",
                "conclusion": "success",
                "duration_s": self.rng.randint(30, 420),
            }
            for name in ("lint", "unit-tests", "chart-tests", "image-build", "trivy-scan")
        ]
        ref = "v2.14.1" if arg else "fix/prod-gateway-timeout"
        return f"$ gh pr checks --json {ref}\n" + json.dumps(
            {"ref": ref, "checks": checks}, indent=1
        )

    def helm_upgrade(self, arg: str) -> str:
        if arg == "":
            return (
                f"$ helm upgrade --install {APP} charts/checkout-api -n {NS} -f "
                "deploy/values-prod.yaml --wait --timeout 10m\n"
                "Error: UPGRADE FAILED: pre-upgrade hooks failed: 1 error occurred:\n"
                "\t* job checkout-api-migrate failed: BackoffLimitExceeded"
                if not self.scaled
                else f"$ helm upgrade --install {APP} charts/checkout-api -n {NS} -f "
                'deploy/values-prod.yaml --wait --timeout 10m\nRelease "checkout-api" has '
                "been upgraded. Happy Helming!\nNAME: checkout-api\nNAMESPACE: shop-prod\n"
                "STATUS: deployed\nREVISION: 49"
            )
        weight = {"canary": 10, "promote": 100}[arg]
        return (
            f"$ helm upgrade {APP} charts/checkout-api -n {NS} -f deploy/values-prod.yaml "
            f"--set image.tag=2.14.1 --set canary.weight={weight} --wait\nRelease "
            f'"checkout-api" has been upgraded. Happy Helming!\nSTATUS: deployed\nREVISION: '
            f"{50 if weight == 10 else 51}"
        )

    def migrate_job(self, arg: str) -> str:
        if arg == "ok":
            return (
                f"$ kubectl logs job/checkout-api-migrate -n {NS}\n"
                f"{self.stamp()} INFO  alembic.runtime.migration Running upgrade 0041 -> 0042, "
                "add orders.tender_split\n"
                f"{self.stamp()} INFO  migrate applied 0042 in 1.83s\n"
                f"{self.stamp()} INFO  migrate database at head (0042)"
            )
        lines = []
        for attempt in (1, 2, 3):
            lines.append(
                f"{self.stamp()} INFO  alembic.runtime.migration Running upgrade 0041 "
                f"-> 0042, add orders.tender_split (attempt {attempt}/3)"
            )
            lines.append(
                f"{self.stamp()} ERROR migrate psycopg.errors.LockNotAvailable: "
                "canceling statement due to lock timeout"
            )
            lines.append("  STATEMENT:  ALTER TABLE orders ADD COLUMN tender_split jsonb")
        lines.append(f"{self.stamp()} ERROR migrate giving up after 3 attempts")
        return f"$ kubectl logs job/checkout-api-migrate -n {NS}\n" + "\n".join(lines)

    def logs_migrate(self, arg: str) -> str:
        return self.migrate_job("fail")

    def psql_activity(self, arg: str) -> str:
        header = (
            " pid   | usename      | application_name | state               | xact_age  | query"
        )
        rows = [header, "-" * len(header)]
        if arg != "clear":
            for _ in range(5 if arg == "filter" else 8):
                rows.append(
                    f" {self.rng.randint(20000, 29999)} | checkout_app | {self.pod():<16.16} | "
                    f"idle in transaction | 00:{self.rng.randint(9, 11):02d}:"
                    f"{self.rng.randint(0, 59):02d}"
                    " | SELECT name, enabled FROM feature_flags"
                )
            rows.append(f"({5 if arg == 'filter' else 14} rows)")
        else:
            rows.append("(0 rows)")
        return (
            '$ psql orders-ro -c "SELECT pid, usename, application_name, state, now() - '
            "xact_start AS xact_age, left(query, 40) FROM pg_stat_activity WHERE xact_start "
            "< now() - interval '1 minute'\"\n" + "\n".join(rows)
        )

    def psql_locks(self, arg: str) -> str:
        if arg == "clear":
            body = "(0 rows)"
        else:
            body = (
                "  relation | mode             | granted | pid\n"
                " ----------+------------------+---------+-------\n"
                "  orders   | RowShareLock     | t       | 24117\n"
                "  orders   | RowShareLock     | t       | 25530\n"
                "  orders   | AccessExclusive  | f       | 31002\n(3 rows)"
            )
        return (
            '$ psql orders-ro -c "SELECT relation::regclass, mode, granted, pid FROM '
            "pg_locks WHERE relation = 'orders'::regclass\"\n" + body
        )

    def psql_orders(self, arg: str) -> str:
        return (
            '$ psql orders-ro -c "SELECT status, count(*) FROM orders WHERE created_at > '
            "now() - interval '30 minutes' GROUP BY 1\"\n status    | count\n"
            f"-----------+-------\n paid      | {self.rng.randint(2800, 3100)}\n pending   | "
            f"{self.rng.randint(20, 60)}\n failed    | {self.rng.randint(3, 12)}\n(3 rows)"
        )

    def get_rs(self, arg: str) -> str:
        return (
            f"$ kubectl get rs -n {NS} -l app={APP}\nNAME                      DESIRED   CURRENT"
            f"   READY   AGE\n{APP}-{self.old_rs}   6         6         6       6d\n"
            f"{APP}-{self.new_rs}   3         3         0       21m"
        )

    def scale_rs(self, arg: str) -> str:
        self.scaled = True
        return (
            f"$ kubectl scale rs/{APP}-{self.new_rs} -n {NS} --replicas=0\n"
            f"replicaset.apps/{APP}-{self.new_rs} scaled"
        )

    def logs(self, arg: str) -> str:
        pod = self.pod()
        lines = []
        for _ in range(self.rng.randint(8, 16)):
            status = self.rng.choice([200] * 12 + [201, 204, 409, 503 if arg == "ready" else 200])
            path = self.rng.choice(
                ["/v1/checkout", "/v1/cart/price", "/healthz/ready", "/v1/payments/authorize"]
                if arg not in ("payments", "reconcile")
                else ["/v1/payments/authorize", "/v1/payments/capture"]
            )
            ms = self.rng.randint(12, 1400 if arg in ("ready", "payments") else 450)
            lines.append(
                f"{self.stamp()} INFO  http {status} {path} {ms}ms "
                f"req={self.rng.getrandbits(48):012x}"
            )
        if arg == "payments":
            lines.append(
                f"{self.stamp()} WARN  payments gateway timeout after 3500ms "
                "(authorize), retrying attempt=2"
            )
        return f"$ kubectl logs {pod} -n {NS} --since=10m | tail -n 20\n" + "\n".join(lines)

    def promql(self, arg: str) -> str:
        queries = {
            "error_rate": 'sum by (track) (rate(http_requests_total{app="checkout-api",'
            'code=~"5.."}[5m])) / sum by (track) (rate(http_requests_total'
            '{app="checkout-api"}[5m]))',
            "p99": "histogram_quantile(0.99, sum by (le, track) (rate("
            'http_request_duration_seconds_bucket{app="checkout-api"}[5m])))',
            "ready_latency": "histogram_quantile(0.95, sum by (le, version) (rate("
            'http_request_duration_seconds_bucket{app="checkout-api",'
            'path="/healthz/ready"}[5m])))',
            "cpu": 'sum(rate(container_cpu_usage_seconds_total{namespace="shop-prod",'
            'container="checkout-api"}[5m])) by (pod)',
            "gateway_timeouts": "sum by (track, outcome) (increase("
            'payment_gateway_calls_total{app="checkout-api"}[15m]))',
        }
        series = [
            {
                "metric": {"track": track},
                "value": [round(self.now.timestamp(), 3), f"{self.rng.uniform(0.001, 0.5):.4f}"],
            }
            for track in ("stable", "canary")
        ]
        body = {"status": "success", "data": {"resultType": "vector", "result": series}}
        return f"$ promql '{queries[arg]}'\n" + json.dumps(body, indent=1)

    def get_cronjob(self, arg: str) -> str:
        return (
            f"$ kubectl get cronjob,jobs -n {NS} -l app=payment-reconcile\n"
            "NAME                              SCHEDULE    SUSPEND   ACTIVE   LAST SCHEDULE\n"
            "cronjob.batch/payment-reconcile   15 2 * * *  False     0        "
            f"{self.rng.randint(6, 8)}h\n\n"
            "NAME                                   COMPLETIONS   DURATION   AGE\n"
            f"job.batch/payment-reconcile-2903{self.rng.randint(10, 99)}   1/1           14m"
            "        "
            f"{self.rng.randint(6, 8)}h"
        )

    def get_hpa(self, arg: str) -> str:
        return (
            f"$ kubectl get hpa {APP} -n {NS}\n"
            "NAME           REFERENCE                 TARGETS   MINPODS   MAXPODS   REPLICAS\n"
            f"checkout-api   Deployment/checkout-api   {self.rng.randint(44, 52)}%/65%   6         "
            "18        6"
        )

    def psql_settings(self, arg: str) -> str:
        return (
            '$ psql orders-ro -c "SELECT rolname, rolconfig FROM pg_roles WHERE rolname = '
            "'checkout_app'\"; psql orders-ro -c 'SHOW idle_in_transaction_session_timeout'\n"
            "   rolname    | rolconfig\n--------------+-----------\n checkout_app | \n(1 row)\n\n"
            " idle_in_transaction_session_timeout\n-------------------------------------\n"
            " 15min\n(1 row)"
        )

    def gh_pr(self, arg: str) -> str:
        return "$ gh pr view 2291 --json title,state,mergeable,reviews\n" + json.dumps(
            {
                "title": "chart: require PAYMENT_GATEWAY_TIMEOUT_MS in values.schema.json",
                "state": "OPEN",
                "mergeable": "CONFLICTING",
                "reviews": [{"author": "jlee", "state": "APPROVED"}],
            },
            indent=1,
        )


def build() -> list[dict[str, Any]]:
    """The whole conversation as OpenAI-style chat messages."""
    g = Gen()
    remembered = "\n".join(f"- {text}" for text, _ in MEMORIES)
    g.say("system", f"{SYSTEM_PROMPT}\n\nWhat you remember from earlier sessions:\n{remembered}")
    retrieved: Counter[str] = Counter()
    for user, actions, docs, plan, reply in TURNS:
        g.tick(60, 240)
        g.say("user", user)
        g.tick(3, 12)
        g.say("assistant", plan)
        # Each action runs once or more (re-checks), as an agent would.
        for tool, arg in actions:
            run: Callable[[str], str] = getattr(g, tool)
            repeats = g.rng.choice((1, 2, 2, 3)) if tool in POLLED else 1
            for _ in range(repeats):
                g.tick(2, 25)
                g.call(tool, {"args": arg} if arg else {}, run(arg))
                if tool in NOTES and g.rng.random() < NOTE_PROBABILITY:
                    note = g.rng.choice(NOTES[tool])
                    g.tick(2, 8)
                    g.say("assistant", f"{tool}: {note}.")
        noise = g.rng.sample(DISTRACTORS, g.rng.randint(1, 2))
        for ref in [*docs, *(f"~{name}" for name, _ in noise)]:
            retrieved[ref] += 1
            if retrieved[ref] > (1 if ref.startswith("~") else MAX_RETRIEVALS):
                continue
            if ref.startswith("~"):
                doc, chunk = ref[1:], "0"
                text = dict(DISTRACTORS)[doc]
                g.rng.uniform(0.02, 0.25)  # the draw the retriever's score took
            else:
                doc, _, chunk = ref.partition(":")
                text = DOCS[doc][int(chunk)]
                g.rng.uniform(0.35, 0.95)
            g.tick(1, 4)
            g.call("search_runbooks", {"doc_id": f"{doc}#{chunk}"}, text)
        g.tick(10, 40)
        g.say("assistant", reply)
    return g.messages


def render() -> str:
    """The JSONL text."""
    return "".join(json.dumps(message, ensure_ascii=False) + "\n" for message in build())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the shipped file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is stale; run scripts/make_demo_data.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({text.count(chr(10))} messages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
