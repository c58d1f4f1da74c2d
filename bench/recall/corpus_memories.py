"""The markdown memories of the fixture: what agents and people saved about Loam.

Loam is an imaginary soil-sensor telemetry platform: field gateways (armv7 boards) read soil
probes and upload readings to an axum API, which publishes them to NATS JetStream; ingest workers
write them into PostgreSQL + TimescaleDB; a React dashboard shows them; an alerts service sends
SMS and email; an optional "insights" feature has an LLM summarise each field's week.

Layout of the imaginary repository: the server crate at the root (`src/api`, `src/ingest`,
`src/storage`, `src/alerts`, `src/insights`, binaries in `src/bin/`), `core/` (loam-core),
`gateway/` (loam-gateway), `xtask/`, `web/` (the dashboard), `deploy/`, `migrations/`.

Each entry: M(key, "tag tag ...", text, **options). The key is only for the questions; the
generator turns it into the memory's id. Options: late=True (saved in the later months: a
correction of something saved before), protected=True, importance="high"|"low",
type="core_context"|"pattern"|"update", updated=True (rewritten once by consolidation).
"""


def M(key, tags, text, **options):
    return {"key": key, "tags": tags.split(), "text": text.strip(), **options}


MEMORIES = [
    # --- testing -------------------------------------------------------------------------------
    M("t_nextest", "testing",
      "Run the test suite with `cargo nextest run --workspace`. Plain `cargo test` works too but is "
      "about 3x slower here and ignores the retry settings in `.config/nextest.toml`."),
    M("t_make_test", "testing make",
      "`make test` = nextest for the Rust side plus `npm test -- --run` in web/. Use it before pushing "
      "if you touched both sides."),
    M("t_db_tests", "testing database",
      "Tests that need Postgres are behind the `test-db` feature: `cargo nextest run --features test-db`. "
      "They read TEST_DATABASE_URL, which defaults to postgres://loam:loam@localhost:5433/loam_test."),
    M("t_db_schema", "testing database pattern",
      "Each DB test gets its own schema from `TestDb::fresh()` (tests/common/db.rs). Never share a schema "
      "between tests; cleanup is a DROP SCHEMA ... CASCADE when the TestDb is dropped."),
    M("t_fixtures", "testing fixtures sensors",
      "Sensor fixtures live in `tests/fixtures/sensors/`, one JSON file per sensor model (`tm-40.json`, "
      "`tm-41.json`, `decagon-5te.json`). Load them with `fixtures::sensor(\"tm-40\")` instead of reading "
      "the files by path."),
    M("t_record_payloads", "testing fixtures gateway",
      "To re-record the raw gateway payloads in tests/fixtures/payloads/ run "
      "`cargo xtask record-payloads --gateway gw-lab-02`. Needs the VPN to the lab network."),
    M("t_insta", "testing snapshots",
      "Snapshot tests use insta. After an intended change run `cargo insta review` (or `cargo insta "
      "accept` once you've read the diff). CI fails when a `.snap.new` file is left pending."),
    M("t_proptest", "testing proptest api",
      "The cursor encode/decode in src/api/pagination.rs has proptest round-trip tests. When one fails "
      "the seed lands in proptest-regressions/ -- commit that file, it becomes a regression case."),
    M("t_flaky_backpressure", "testing flaky ingest",
      "`ingest::worker::tests::backpressure_drops_oldest` is flaky under load: it races the 250 ms flush "
      "timer. It's quarantined with #[ignore] and only runs in the nightly job for now."),
    M("t_flaky_policy", "testing ci process",
      "Flaky tests get quarantined with `#[ignore = \"flaky: <issue link>\"]`, never deleted. The nightly "
      "workflow runs them with `cargo nextest run --run-ignored ignored-only`."),
    M("t_nextest_retries", "testing ci gotcha",
      "nextest retries failing tests twice in CI (the `ci` profile in .config/nextest.toml) but zero times "
      "locally. A test that only passes on retry shows green in CI -- look for FLAKY in the JUnit report."),
    M("t_vitest", "web testing",
      "Dashboard unit tests are vitest. `npm test` inside web/ starts watch mode; from scripts or CI use "
      "`npm test -- --run`."),
    M("t_playwright", "web testing e2e",
      "End-to-end tests are Playwright, under web/e2e/. `npx playwright test` needs the API up on 8080 and "
      "seeded data (`make seed`). First time on a machine: `npx playwright install chromium`."),
    M("t_e2e_nightly", "e2e ci",
      "The e2e suite only runs in nightly.yml, not on PRs -- it takes about 14 minutes. Run it locally "
      "when you change login or the readings chart."),
    M("t_test_names", "testing conventions",
      "Name tests as behaviour sentences in snake_case: `rejects_reading_from_unknown_sensor`, not "
      "`test_reading_3`."),
    M("t_clock", "testing pattern conventions",
      "Don't call `Utc::now()` in ingest or alerts code; take a `&dyn Clock` so tests can pass a "
      "`FixedClock`. Tests that sleep to wait for time to pass get rejected in review.",
      type="pattern"),
    M("t_api_integration", "testing api",
      "API integration tests live in tests/api/, one file per resource (readings.rs, sensors.rs, "
      "alerts.rs). They build the router in-process with `TestApp::spawn()` -- no real port is opened."),
    M("t_coverage", "testing coverage",
      "Coverage: `cargo llvm-cov nextest --workspace --html`, report in target/llvm-cov/html/. There's no "
      "coverage gate, but reviewers do ask about untested branches."),
    M("t_too_many_clients", "testing database gotcha",
      "DB tests failing with `FATAL: sorry, too many clients already`? Lower the parallelism with "
      "NEXTEST_TEST_THREADS=4. The compose Postgres only allows 50 connections."),
    M("t_wiremock", "testing alerts sms",
      "Calls to the SMS provider are mocked with wiremock (tests/alerts/notify.rs). Tests must never hit "
      "the real Twilio API, not even the sandbox."),
    M("t_corr_payload_fixtures", "correction fixtures gateway",
      "Correction: the gateway payload fixtures are not under tests/fixtures/sensors/ any more -- they moved "
      "to tests/fixtures/payloads/ when the gateway crate was split out.",
      late=True),
    M("t_bench", "performance benchmarks",
      "Benchmarks are criterion benches in benches/ (`cargo bench --bench ingest_throughput`). Not run in "
      "CI. Compare with main: `cargo bench -- --save-baseline main` on main, then `-- --baseline main` on "
      "your branch."),
    M("t_doctests", "testing docs",
      "Doc tests are turned off for the server crate (`doctest = false`), so examples in /// comments are "
      "never compiled. Keep them short, or write a real test next to them."),
    M("t_api_snapshots", "testing snapshots api",
      "API response bodies in tests/api are compared as insta JSON snapshots. Redact ids and timestamps "
      "with insta's redactions (`\".id\" => \"[id]\"`), or every run produces a new snapshot."),
    M("t_slow", "testing",
      "nextest marks tests slower than 5 s as SLOW (slow-timeout in .config/nextest.toml). Keep the whole "
      "local run under 3 minutes; move anything heavy behind `test-db` or into the nightly set."),
    M("t_gateway_tests", "testing gateway",
      "Gateway tests run fine on x86: `cargo nextest run -p loam-gateway`. The serial port is faked with a "
      "pty pair (`serialport::TTYPort::pair()`), no adapter needed."),
    M("t_tz_tests", "testing time gotcha",
      "Tests of daily aggregates must set the org timezone explicitly. CI runs in UTC, but on a laptop in "
      "Santiago the same tests failed off by one day."),
    M("t_flaky_fixed", "testing ingest",
      "The backpressure test isn't flaky any more: it now drives the flush with a manual tick instead of "
      "the real 250 ms timer, and it's back in the normal run.",
      late=True),
    M("t_pref_tests_first", "preference testing",
      "User wants a failing test written first when fixing a bug, then the fix, in the same PR."),
    M("t_ui_mocks", "web testing",
      "Dashboard component tests mock the API with msw handlers from web/src/test/handlers.ts; add a "
      "handler there rather than stubbing fetch in a test."),

    # --- build and toolchain -------------------------------------------------------------------------
    M("b_toolchain", "build rust",
      "The toolchain is pinned in rust-toolchain.toml (1.82.0). Don't bump it in a feature PR: toolchain "
      "bumps get their own PR because new clippy lints show up."),
    M("b_simd_arm", "correction build gateway",
      "Correction: the `simd` feature must stay off for the ARM gateway builds. It compiles for armv7, but "
      "the NEON decode path produces wrong CRCs on TM-40 payloads, so readings get rejected as corrupt.",
      protected=True, importance="high"),
    M("b_simd_x86", "build performance",
      "`simd` is a default feature for the server build (x86_64) and makes payload decoding about 30% "
      "faster. Only the gateway turns it off."),
    M("b_cross", "build gateway arm",
      "Gateway release build: `cross build --release --target armv7-unknown-linux-gnueabihf -p "
      "loam-gateway --no-default-features`. Plain cargo can't link it without the cross toolchain."),
    M("b_cross_colima", "build gateway gotcha",
      "`cross` needs a running docker. On a Mac with colima do `colima start --cpu 4 --memory 8` first, "
      "otherwise it fails with a confusing `exec format error`."),
    M("b_sccache", "build gotcha",
      "Local builds use sccache when RUSTC_WRAPPER=sccache is set (CI always does). Weird stale build "
      "errors: `sccache --stop-server`, then rebuild. Zeroing the stats does nothing."),
    M("b_features", "build features",
      "Cargo features of the server: `simd` (default), `test-db` (DB tests), `otel` (OpenTelemetry export, "
      "on in prod images), `insights` (LLM summaries). Run `cargo hack check --feature-powerset --depth 2` "
      "before adding another."),
    M("b_make_targets", "make",
      "Makefile targets worth knowing: make dev, make test, make lint, make seed, make migrate, "
      "make gateway-image, make release. `make help` lists them all with a line each."),
    M("b_lint", "lint ci",
      "`make lint` runs cargo fmt --check, cargo clippy --all-targets --all-features -- -D warnings, and "
      "`npm run lint` in web/. CI runs exactly these three."),
    M("b_check_fast", "build",
      "A full release build takes ~6 min on a laptop. For quick iteration `cargo check --bin loam-api` "
      "(about 20 s warm) or `cargo check -p loam-core`."),
    M("b_layout", "architecture context",
      "Repo layout: server crate at the root (src/api, src/ingest, src/storage, src/alerts, src/insights; "
      "binaries in src/bin/), core/ is loam-core (types only, no IO), gateway/ is loam-gateway, xtask/ for "
      "codegen and maintenance, web/ the dashboard. loam-core must not depend on tokio.",
      type="core_context", protected=True),
    M("b_deny", "ci dependencies",
      "`cargo deny check` runs in CI (licenses and advisories). A new dependency under GPL fails it; ask "
      "before adding an exception to deny.toml."),
    M("b_few_deps", "preference dependencies",
      "User prefers few dependencies: check whether std or an existing dep already does it before adding a "
      "crate. No new crate for a one-liner (no itertools just for `join`)."),
    M("b_target_cpu", "build docker gotcha",
      "Never put RUSTFLAGS=\"-C target-cpu=native\" in the Dockerfile. Images are built on CI runners with "
      "other CPUs than prod, and the API once died with SIGILL on start."),
    M("b_rustls", "build dependencies",
      "We use rustls everywhere. If a build suddenly pulls in openssl-sys it's a mistake (usually reqwest's "
      "default features): `default-features = false, features = [\"rustls-tls\", \"json\"]`."),
    M("b_mold", "build",
      "Linking is much faster with mold. Put `rustflags = [\"-C\", \"link-arg=-fuse-ld=mold\"]` under "
      "[target.x86_64-unknown-linux-gnu] in your own ~/.cargo/config.toml, not the repo's."),
    M("b_xtask", "xtask codegen",
      "Code generation goes through xtask: `cargo xtask openapi` regenerates openapi/loam.yaml from the "
      "route annotations; `cargo xtask codegen-ts` writes web/src/api/types.ts from that."),
    M("b_email_mjml", "alerts email build gotcha",
      "Alert email templates are MJML (src/alerts/templates/) compiled by build.rs. On a fresh machine "
      "the build fails until you `npm i -g mjml` once."),
    M("b_cargo_lock", "build git",
      "Cargo.lock is committed (we ship binaries). On a lockfile conflict take main's version and re-run "
      "`cargo update -p <crate>` for the crate your branch changed."),
    M("b_release_profile", "build performance",
      "[profile.release] has lto = \"thin\" and codegen-units = 1. Release builds are slow on purpose; use "
      "the `dev-opt` profile (`cargo run --profile dev-opt`) when you need speed but not the wait."),
    M("b_nightly_fmt", "rust fmt gotcha",
      "rustfmt.toml sets imports_granularity = \"Crate\" and group_imports = \"StdExternalCrate\", which "
      "only nightly rustfmt honours: use `cargo +nightly fmt`. Stable fmt silently ignores them and CI then "
      "complains."),

    # --- local development ---------------------------------------------------------------------------
    M("l_make_dev", "dev docker",
      "`make dev` starts postgres, nats and mailhog with docker compose, runs the migrations, and runs the "
      "API under cargo watch. The dashboard is separate: `npm run dev` in web/."),
    M("l_env_file", "dev config gotcha",
      "Copy .env.example to .env before the first `make dev`. The API refuses to start without "
      "LOAM_JWT_SECRET and the example file has a dev value for it."),
    M("l_ports", "dev ports context",
      "Local ports: API 8080, metrics 9464, dashboard 5173 (Vite), Postgres 5433 (not 5432, so it doesn't "
      "clash with a local install), NATS 4222, MailHog UI 8025, Storybook 6006.",
      importance="high"),
    M("l_pg_5432", "database gotcha dev",
      "psql connects but the tables are missing? You're probably on your own Postgres at 5432, not the "
      "compose one on 5433."),
    M("l_seed", "dev database",
      "`make seed` loads two demo orgs, 40 sensors and 30 days of synthetic readings. Careful: it "
      "truncates the readings table first."),
    M("l_clean_db", "docker database dev",
      "Start from a clean database with `docker compose down -v && make dev`. Without -v the pg volume "
      "keeps the old schema and migrations look applied."),
    M("l_vite_proxy", "web dev config",
      "The dashboard dev server proxies /api to http://localhost:8080 (see web/vite.config.ts), so don't "
      "set VITE_API_BASE_URL locally."),
    M("l_node", "web node gotcha",
      "Node is pinned in web/.nvmrc. With a newer major `npm ci` fails in sharp's postinstall; run "
      "`nvm use` in web/ first."),
    M("l_mailhog", "dev alerts email",
      "In dev, alert emails go to MailHog: http://localhost:8025. .env has SMTP_HOST=localhost and "
      "SMTP_PORT=1025."),
    M("l_one_watch", "dev",
      "`make dev` already runs cargo watch on the API. Don't start a second `cargo watch -x 'run --bin "
      "loam-api'` or the two fight over port 8080 (AddrInUse)."),
    M("l_apple_silicon", "docker dev gotcha",
      "On Apple Silicon the timescaledb image needs `platform: linux/amd64`. It's in "
      "docker-compose.override.yml.example -- copy that file to docker-compose.override.yml."),
    M("l_dev_login", "dev auth",
      "Dev login for the dashboard: admin@demo.loam.local / loam-dev (created by make seed). Never create "
      "that user on staging."),
    M("l_nats_sub", "dev nats ingest",
      "To watch ingest traffic locally: `nats sub 'readings.>' --server nats://localhost:4222`."),
    M("l_gw_sim", "dev gateway",
      "No hardware? `cargo run -p loam-gateway --bin gw-sim -- --sensors 20 --interval 5s` simulates a "
      "gateway posting readings to the local API."),
    M("l_direnv", "dev preference",
      "I use direnv with a .envrc that sources .env; .envrc is in .gitignore, don't commit it."),
    M("l_compose_profiles", "docker dev",
      "docker-compose.yml has profiles: the default brings up postgres/nats/mailhog; `--profile obs` adds "
      "Prometheus (9090), Grafana (3000) and Tempo for local tracing."),

    # --- database ------------------------------------------------------------------------------------
    M("d_sqlx_prepare", "database sqlx ci",
      "Queries are checked at compile time by the sqlx macros. After changing a query run `cargo sqlx "
      "prepare --workspace` and commit the .sqlx/ folder -- CI builds with SQLX_OFFLINE=true."),
    M("d_sqlx_stale", "database sqlx gotcha",
      "The sqlx offline cache goes stale after rebasing onto a main that changed migrations. Symptom in CI: "
      "`no cached data for this query`. Migrate your local DB, then re-run `cargo sqlx prepare --workspace`."),
    M("d_migration_add", "database migrations",
      "New migration: `sqlx migrate add -r <name>` creates the .up.sql and .down.sql pair in migrations/. "
      "Name it with a verb: add_sensor_model_index, drop_legacy_units."),
    M("d_migration_pr", "database migrations process decision",
      "Decision: schema migrations go in a PR of their own, merged and deployed before the code that needs "
      "them. Every migration must have a working down file.",
      protected=True),
    M("d_make_migrate", "database migrations make",
      "`make migrate` runs `sqlx migrate run` against DATABASE_URL. For the test database: "
      "`make migrate DATABASE_URL=$TEST_DATABASE_URL`."),
    M("d_hypertable", "database timescale",
      "readings is a TimescaleDB hypertable on observed_at with 7-day chunks. The timescaledb extension "
      "must exist before migration 0003; the compose image creates it for you, a plain postgres image "
      "doesn't."),
    M("d_compression", "database timescale gotcha",
      "Chunks older than 30 days are compressed (segmentby sensor_id). UPDATE or DELETE on a compressed "
      "chunk fails, so a backfill into old data has to `SELECT decompress_chunk(...)` first."),
    M("d_retention", "database retention",
      "Raw readings are kept 90 days (retention.raw_days); after that only the hourly continuous aggregate "
      "readings_hourly remains."),
    M("d_pool", "database config",
      "storage.pool_size defaults to 20 per process. API, ingest and alerts each have their own pool and "
      "the prod cluster allows 200 connections in total -- don't go above 40."),
    M("d_database_url", "database config env",
      "DATABASE_URL is the only way to point the services at Postgres; there's no host/port key in "
      "loam.toml. In kubernetes it comes from the `loam-db` secret."),
    M("d_utc", "database time conventions",
      "All timestamps are timestamptz, in UTC. Sensor clocks drift, so ingest stores the gateway's "
      "received_at next to the sensor's observed_at."),
    M("d_time_range", "database performance",
      "Always query readings with a sensor_id and a time range. There is no index for a time-range-only "
      "scan across all sensors; such a query touches every chunk."),
    M("d_explain", "database performance",
      "Run `EXPLAIN (ANALYZE, BUFFERS)` on staging, not locally -- the local data set is too small for the "
      "plans to mean anything."),
    M("d_no_orm", "database conventions pattern",
      "No ORM: hand-written SQL with sqlx::query_as! into plain structs in src/storage/. Repository "
      "functions take `&PgPool` or `&mut Transaction`.",
      type="pattern"),
    M("d_transactions", "database pattern",
      "A function that must be atomic takes `&mut sqlx::Transaction<'_, Postgres>` and the caller commits. "
      "Never begin a transaction inside a repository function."),
    M("d_uuid_v7", "database conventions",
      "Primary keys are UUIDv7 (time-ordered), generated in Rust with `Uuid::now_v7()`, not by a Postgres "
      "default."),
    M("d_soft_delete", "database sensors gotcha",
      "Sensors are soft-deleted (deleted_at). Their readings stay until retention drops them. Every sensor "
      "query needs `WHERE deleted_at IS NULL` -- the admin 'ghost sensors' bug was a missing one."),
    M("d_backups", "database ops backup",
      "Prod backups: pgBackRest, full weekly plus WAL archiving to the loam-pg-backups bucket. The restore "
      "drill is quarterly, runbook in docs/runbooks/restore.md."),
    M("d_replica", "database replica",
      "Dashboard read queries may use the read replica (DATABASE_REPLICA_URL). Anything that reads after a "
      "write in the same request must stay on the primary -- replica lag is up to a few seconds."),
    M("d_sql_injection", "security database",
      "Never build SQL with format!. Even a sortable column goes through a match on an enum (SortBy) that "
      "returns a &'static str."),
    M("d_storage_error", "database errors",
      "StorageError (src/storage/error.rs) wraps sqlx::Error but has its own NotFound and Conflict "
      "variants; map unique-violation (23505) to Conflict in the repository, not in handlers."),
    M("d_lock_timeout", "database migrations gotcha",
      "Migrations that ALTER the readings hypertable take a heavy lock. Start them with "
      "`SET lock_timeout = '5s';` so a stuck deploy fails fast instead of blocking ingest."),
    M("d_index_concurrently", "database migrations",
      "Create indexes on big tables with CREATE INDEX CONCURRENTLY, in a migration file of its own with "
      "`-- no-transaction` at the top (sqlx runs it outside a transaction then)."),

    # --- API -----------------------------------------------------------------------------------------
    M("a_port", "api ports",
      "The API listens on 8080 (LOAM_API_PORT overrides it). Prometheus metrics are on a separate admin "
      "listener, port 9464."),
    M("a_axum", "api errors",
      "The API is axum 0.7. Handlers return `Result<Json<T>, ApiError>`; ApiError (src/api/error.rs) turns "
      "into a JSON problem body with a stable `code` string."),
    M("a_error_codes", "api errors docs",
      "When you add an ApiError variant, add its `code` to docs/api/errors.md as well. The dashboard "
      "switches on the code, not on the message or the HTTP status."),
    M("a_cursor", "api pagination",
      "List endpoints paginate with an opaque cursor (`?cursor=...&limit=...`): base64 of the last row's "
      "(observed_at, id). No offset pagination on new endpoints."),
    M("a_page_size", "api pagination config",
      "Default page size is 50, the max is 200 (api.max_page_size). A bigger `limit` is clamped to the max, "
      "not rejected with a 400."),
    M("a_versioning", "api versioning",
      "The public API is versioned in the path (/v1/...). A breaking change needs a /v2 route, and /v1 "
      "stays up for 6 months after."),
    M("a_openapi", "api openapi",
      "openapi/loam.yaml is generated (`cargo xtask openapi`). Never edit it by hand -- CI regenerates it "
      "and fails on a diff."),
    M("a_rate_limits", "api ratelimit",
      "Rate limits: 600 requests/min per API key, 120/min per dashboard session. A 429 carries "
      "Retry-After in seconds, and the gateway client honours it."),
    M("a_auth", "api auth security",
      "Gateways authenticate with the `X-Loam-Key` header (one API key per gateway); the dashboard uses a "
      "JWT in an httpOnly cookie. Never accept an API key as a query parameter."),
    M("a_org_scope", "api security tenants",
      "Every query the API runs must be scoped by the org_id of the auth context. Use the `OrgScoped` "
      "extractor; a handler that takes org_id from the path is a tenant-isolation bug.",
      importance="high"),
    M("a_timeout", "api config",
      "api.request_timeout_ms defaults to 10000. The export endpoint overrides it to 120000 because a CSV "
      "export of a year of data takes a while."),
    M("a_snake_case", "api conventions",
      "JSON fields in the API are snake_case (serde's default). The dashboard doesn't convert; the "
      "generated TS types have snake_case fields too."),
    M("a_health", "api ops",
      "Health endpoints: GET /healthz (the process is up) and GET /readyz (database and NATS reachable). "
      "k8s uses readyz for readiness, healthz for liveness."),
    M("a_cors", "api security config",
      "CORS is only on for the dashboard origins in api.cors_origins. Add staging preview URLs there -- "
      "never a wildcard."),
    M("a_export_stream", "api performance",
      "The CSV export (GET /v1/readings/export) streams rows. Don't collect them into a Vec: a year of "
      "15-minute readings for 500 sensors is ~17M rows."),
    M("a_problem_json", "api errors security",
      "Errors are application/problem+json with type, title, status, code and detail. `detail` must never "
      "contain SQL, stack traces or internal paths."),
    M("a_idempotency", "api ingest",
      "POST /v1/readings takes an Idempotency-Key header. Gateways send one per batch so a retried upload "
      "doesn't insert the readings twice."),
    M("a_deprecation", "api versioning",
      "Deprecated endpoints send `Deprecation: true` plus a `Sunset` date header, and log a warn with the "
      "API key id on each call, so we know whom to chase."),
    M("a_pagination_offset_old", "api pagination",
      "The old /v1/sensors endpoint still takes ?page= and ?per_page= for the legacy mobile web view. It's "
      "deprecated; new clients use the cursor."),
    M("a_validation", "api errors",
      "Request validation uses the `validator` crate on the request structs; a failed validation becomes "
      "ApiError::Validation with one entry per field, HTTP 422."),
    M("a_extractors", "api pattern",
      "Custom extractors live in src/api/extract.rs: OrgScoped, CurrentUser, GatewayKey, Pagination. "
      "Put a new one there rather than parsing headers in a handler."),
    M("a_max_body", "api config gotcha",
      "Max request body is 2 MB (api.max_body_bytes). Gateways that were offline for days upload in "
      "chunks of 200 readings for that reason; a 413 from the API means a client ignores the chunking."),
    M("a_webhook", "api domain",
      "Irrigation events arrive from the farms' controllers via POST /v1/webhooks/irrigation, signed with "
      "an HMAC-SHA256 header (X-Loam-Signature). We only store them for the chart overlay."),

    # --- ingest --------------------------------------------------------------------------------------
    M("i_flow", "ingest architecture context",
      "Ingest path: gateway POST /v1/readings -> the API validates and publishes to NATS subject "
      "readings.<org_id> -> ingest workers consume, dedup and batch-insert into Postgres.",
      type="core_context", protected=True),
    M("i_channel", "ingest backpressure",
      "Ingest workers use a bounded tokio mpsc channel (capacity 1024 batches). On back-pressure they drop "
      "the OLDEST batch and bump loam_ingest_dropped_total."),
    M("i_copy", "ingest performance database",
      "Batch inserts use COPY (sqlx PgCopyIn). A batch is flushed at ingest.batch_size readings (default "
      "500) or after 250 ms, whichever comes first."),
    M("i_dedup", "ingest database",
      "Readings are deduplicated on (sensor_id, observed_at) with ON CONFLICT DO NOTHING. Duplicates are "
      "normal (gateways retry) and not an error."),
    M("i_dlq", "ingest nats errors",
      "Payloads that fail to decode go to NATS subject readings.dlq with the error in a header. After a "
      "fix, `cargo xtask dlq-replay --since 1h` replays them."),
    M("i_jetstream", "ingest nats",
      "JetStream stream READINGS keeps 24 h of messages (max_age), so ingest can catch up after an outage. "
      "Consumers are durable and named ingest-<n>."),
    M("i_ack_after_commit", "ingest nats gotcha",
      "Only ack a NATS message after the COPY has committed. We once acked before the insert and lost "
      "readings when a worker crashed."),
    M("i_errors", "ingest errors",
      "IngestError variants: Decode, UnknownSensor, Storage, Backpressure. UnknownSensor is logged at "
      "warn and the reading dropped, not retried."),
    M("i_max_in_flight", "ingest config performance",
      "ingest.max_in_flight (default 4) bounds concurrent COPYs per worker. More than about 8 only makes "
      "Postgres slower."),
    M("i_calibration", "ingest sensors",
      "Raw sensor values are calibrated at ingest with the per-model coefficients in "
      "core/src/calibration.rs; the raw value is kept in raw_value so we can recalibrate later."),
    M("i_units", "sensors units",
      "Soil moisture is stored as volumetric water content in percent (0-100), temperature in degrees C. "
      "The TM-40 reports permille, so decode divides by 10."),
    M("i_suspect", "ingest sensors",
      "A moisture value above 100 or below 0 is flagged quality='suspect', not dropped -- the agronomists "
      "want to see broken probes."),
    M("i_lag", "ingest metrics alerts",
      "Ingest lag metric: loam_ingest_lag_seconds (now minus observed_at at insert). The alert fires above "
      "300 s for 10 minutes."),
    M("i_scaling", "ingest ops",
      "Ingest scales horizontally: more replicas means more durable consumers. It doesn't help to go beyond "
      "the 8 partitions of the stream."),
    M("i_backfill", "ingest backfill",
      "Historical data goes in with `cargo xtask backfill --file dump.csv --org <id>`, never through the "
      "API: rate limits, and old readings would trigger alerts."),
    M("i_incident_acks", "ingest nats incident",
      "Incident in August: ingest stalled for 40 minutes because the JetStream consumer hit "
      "max_ack_pending (1000) behind a slow COPY. We raised it to 10000 and added the "
      "loam_ingest_pending_acks gauge.\n\nIf ingest lag grows while the workers look idle, check pending "
      "acks first.",
      importance="high"),
    M("i_corr_batch", "correction ingest config",
      "Correction: the default ingest.batch_size is 500, not 1000. 1000 was the value before the switch to "
      "COPY.",
      late=True),
    M("i_decoder_pref", "ingest pattern",
      "New payload formats get their own decoder module under src/ingest/decode/ implementing the "
      "PayloadDecoder trait; the dispatch is on the firmware version in the batch header."),
    M("i_batch_struct", "ingest",
      "ReadingBatch is what travels over NATS: gateway_id, firmware, sent_at, and up to 200 readings. It's "
      "serialized with postcard, not JSON (about 4x smaller)."),

    # --- gateway -------------------------------------------------------------------------------------
    M("g_armv7", "gateway arm",
      "Field gateways are Raspberry Pi CM4 boards running 32-bit Raspberry Pi OS, so armv7, not aarch64. "
      "Don't assume 64-bit when picking crates with asm."),
    M("g_ota", "gateway deploy ota",
      "Gateway updates go over the air with Mender. `make gateway-image` builds the artifact; the release "
      "workflow uploads it. Always try it on gw-lab-01 and gw-lab-02 before a fleet rollout."),
    M("g_buffer", "gateway offline",
      "Offline, the gateway buffers readings in SQLite (/var/lib/loam/buffer.db) for up to 7 days. On "
      "reconnect it uploads oldest first, 200 readings per request."),
    M("g_upload_interval", "gateway config",
      "gateway.upload_interval_secs defaults to 60; the low-power profile uses 900. Change it with a config "
      "push from the dashboard, not a new image."),
    M("g_dialout", "gateway sensors gotcha",
      "Probes talk SDI-12 through a serial adapter at /dev/ttyUSB0. The loam user must be in the dialout "
      "group, or every read fails with EACCES (Permission denied)."),
    M("g_ntp", "gateway time",
      "Gateways have no RTC: after a reboot without network the clock says 1970 until NTP syncs. The "
      "gateway refuses to stamp readings before the first sync."),
    M("g_logs", "gateway ops",
      "Gateway logs: `journalctl -u loam-gateway -f` on the device. Remote access through the bastion: "
      "`ssh gw-<serial>.fleet.loam.internal`."),
    M("g_mqtt", "gateway mqtt legacy",
      "Old gateways (firmware < 2.0) publish over MQTT on port 1883 to the mqtt-bridge service; newer ones "
      "POST to the API directly. The bridge is deprecated."),
    M("g_memory", "gateway performance",
      "Gateways have 512 MB of RAM. Keep the gateway's RSS under 40 MB: no multi-thread tokio runtime there, "
      "use current_thread."),
    M("g_sensor_id", "sensors conventions",
      "Sensor ids look like SN-3F9A21C0B7 (SN- and 10 upper-case hex digits). Parse with "
      "loam_core::SensorId::parse; don't write another regex for it."),
    M("g_provision", "gateway ops",
      "Provisioning a new gateway:\n\n- flash the base image from `make gateway-image` with rpi-imager\n"
      "- `loam-admin gateways register --serial <serial> --org <org>` prints the API key once\n"
      "- put the key into /etc/loam/gateway.toml and `systemctl restart loam-gateway`\n\nIt shows up in "
      "the dashboard after its first upload."),
    M("g_corr_mqtt", "correction gateway mqtt",
      "Correction: the mqtt-bridge has not been removed yet, only deprecated. 14 gateways in Spain still "
      "run firmware 1.x and depend on it.",
      late=True),
    M("g_gateway_error", "gateway errors",
      "GatewayError::Upload wraps the HTTP error and is retried with exponential backoff capped at 15 min; "
      "GatewayError::Sensor (a probe not answering) is reported in the next batch header instead."),
    M("g_watchdog", "gateway ops",
      "The gateway service has WatchdogSec=120 in its systemd unit and pings the watchdog from the upload "
      "loop. A hang longer than 2 minutes restarts it."),

    # --- web dashboard -------------------------------------------------------------------------------
    M("w_stack", "web architecture",
      "Dashboard: React 18 + TypeScript + Vite, TanStack Query for server state, no Redux. Charts are uPlot "
      "(recharts was too slow with 10k points)."),
    M("w_npm_ci", "web npm",
      "Use `npm ci` in CI and scripts; `npm install` only when you change dependencies. package-lock.json is "
      "committed."),
    M("w_lint", "web lint ci",
      "Dashboard checks: `npm run lint` (eslint) and `npm run typecheck` (tsc --noEmit). CI's web-lint job "
      "runs both."),
    M("w_types", "web codegen",
      "Never hand-edit web/src/api/types.ts. Regenerate it with `cargo xtask codegen-ts` after an API change."),
    M("w_hooks", "web pattern",
      "Data fetching goes through the hooks in web/src/api/hooks.ts (useReadings, useSensors, "
      "useAlertRules). Components never call fetch directly.",
      type="pattern"),
    M("w_use_readings", "web api",
      "useReadings takes {sensorId, from, to, resolution}: 'raw' for ranges under 48 h, otherwise 'hourly', "
      "which reads readings_hourly."),
    M("w_i18n", "web i18n",
      "Every UI string goes through i18next (`t('sensors.title')`), keys in web/src/locales/en.json and "
      "es.json. Spanish is required: most users are in Chile and Spain."),
    M("w_flags", "web featureflags",
      "Frontend feature flags come from GET /v1/me (the flags field) and are toggled per org in the admin "
      "panel. Wrap a new page in <Flag name=\"...\">."),
    M("w_css", "web css conventions",
      "Styling is CSS modules (*.module.css). No Tailwind, no styled-components."),
    M("w_storybook", "web",
      "Storybook has the chart components: `npm run storybook`, port 6006."),
    M("w_build_env", "web config gotcha",
      "VITE_API_BASE_URL is baked in at build time for the staging and prod bundles. Changing it needs a "
      "rebuild; it is not read at runtime."),
    M("w_sentry", "web observability",
      "Frontend errors go to Sentry (project loam-web); the release workflow uploads source maps. No PII in "
      "breadcrumbs."),
    M("w_a11y", "web preference a11y",
      "User wants accessible UI: every chart needs a table fallback and aria-labels. Run `npm run "
      "test:a11y` (axe) on a new page."),
    M("w_timezones", "web time",
      "Use date-fns-tz and always show times in the org's timezone, not the browser's: agronomists and "
      "farms are in different zones."),
    M("w_bundle", "web performance ci",
      "Bundle budget: main chunk under 250 KB gzipped; CI's size-limit step fails above it. The map page is "
      "lazy-loaded because leaflet is big."),
    M("w_downsample", "web performance",
      "The dashboard downsamples every series to at most 2,000 points (LTTB in web/src/charts/downsample.ts) "
      "before handing it to uPlot."),
    M("w_pkg_lock_conflict", "web npm git",
      "package-lock.json conflict: check out main's version and run `npm install` again. Never merge it by "
      "hand."),
    M("w_corr_node", "correction web node",
      "Correction: the dashboard needs Node 20, not 18 -- .nvmrc was bumped in August.",
      late=True),
    M("w_routes", "web",
      "Routes are in web/src/routes.tsx with react-router 6; pages under web/src/pages/<Name>Page.tsx, one "
      "folder per page when it has parts."),
    M("w_query_keys", "web pattern",
      "TanStack Query keys are built by the helpers in web/src/api/keys.ts (`keys.readings(sensorId, "
      "range)`); after a mutation invalidate via those, never with a string literal."),
    M("w_mobile", "web",
      "The dashboard must work on phones (agronomists in the field): test new pages at 375 px wide."),

    # --- CI ------------------------------------------------------------------------------------------
    M("c_required", "ci",
      "Required checks on main: fmt, clippy, test, sqlx-check, web-lint, web-test, deny. Merging needs all "
      "of them green and one approval."),
    M("c_workflows", "ci",
      "Workflows: ci.yml (every PR), nightly.yml (e2e, ignored tests, cargo audit), release.yml (tags v*), "
      "gateway.yml (gateway image when gateway/ changes)."),
    M("c_cache", "ci performance",
      "CI caches cargo with Swatinem/rust-cache keyed on Cargo.lock. On a cache miss the test job takes "
      "18 min instead of 6."),
    M("c_clippy", "ci lint",
      "clippy runs with -D warnings, --all-targets --all-features. Fix the lint instead of allowing it; if "
      "an allow is really needed, put the reason in a comment next to it."),
    M("c_sqlx_check", "ci sqlx",
      "When CI fails only in sqlx-check it's nearly always a stale .sqlx/ folder. Run cargo sqlx prepare "
      "and push; re-running the job won't help."),
    M("c_pg_service", "ci database",
      "The CI test job uses a postgres service container (timescale/timescaledb:2.14-pg16) on port 5432, "
      "unlike the local compose setup on 5433."),
    M("c_docs_only", "ci docs",
      "Docs-only PRs skip the Rust jobs through paths-ignore (docs/**, *.md). They still run web-lint when "
      "they touch web/."),
    M("c_secrets", "ci security",
      "Only release.yml can read the registry and Mender tokens. PR workflows from forks get no secrets at "
      "all."),
    M("c_junit", "ci testing",
      "On a test failure CI uploads target/nextest/ci/junit.xml as an artifact; download it to see which "
      "tests were retried."),
    M("c_timeouts", "ci",
      "CI jobs time out after 30 min; the nightly e2e job after 60."),
    M("c_rerun_failed", "ci",
      "Re-run only the failed jobs of a run: `gh run rerun <run-id> --failed`."),
    M("c_runner_arm", "ci gateway arm",
      "gateway.yml cross-compiles on an x86 runner; there's no ARM runner. The on-device smoke test runs on "
      "gw-lab-01 through a self-hosted job that only maintainers can trigger."),
    M("c_corr_required", "correction ci",
      "Correction: `deny` is a required check too, I left it out earlier. And `sqlx-check` is its own job, "
      "not part of test.",
      late=True),

    # --- deploy --------------------------------------------------------------------------------------
    M("x_staging", "deploy staging",
      "Staging deploys itself: every merge to main builds images and Argo CD syncs loam-staging within "
      "about 5 minutes."),
    M("x_prod", "deploy prod release",
      "Prod deploy: `make release VERSION=x.y.z` creates the tag and the changelog section, release.yml "
      "builds the images, then someone approves the loam-prod sync in Argo CD."),
    M("x_freeze", "deploy process",
      "No prod deploys on Fridays, or on the day before a public holiday in Chile or Spain (our customers' "
      "harvest operations). Staging is fine any day."),
    M("x_rollback", "deploy rollback ops",
      "Roll back prod with `argocd app rollback loam-prod <revision>` (find it with `argocd app history "
      "loam-prod`). Migrations are NOT rolled back by this."),
    M("x_migrate_hook", "deploy migrations",
      "Migrations run in a Helm pre-upgrade hook Job (deploy/helm/loam/templates/migrate-job.yaml). If it "
      "fails the deploy stops and the old pods keep serving."),
    M("x_canary", "deploy prod",
      "The prod API uses an Argo Rollouts canary: 10% for 15 min, then 50%, then 100%. It aborts by itself "
      "if the 5xx rate goes above 1%."),
    M("x_values", "deploy config",
      "Per-environment settings are in deploy/helm/loam/values-staging.yaml and values-prod.yaml. No secrets "
      "there: those are SealedSecrets in deploy/secrets/."),
    M("x_images", "deploy docker",
      "Images are tagged with the git sha and pushed to ghcr.io/loam-dev/loam-api, loam-ingest and "
      "loam-alerts. values-prod.yaml pins them by digest."),
    M("x_hotfix", "deploy process",
      "Hotfix: branch hotfix/x.y.z from the release tag, cherry-pick the fix, tag and deploy, then merge "
      "back into main. Never ship whatever is on main as a hotfix."),
    M("x_dockerfile", "docker deploy",
      "deploy/Dockerfile is multi-stage with cargo-chef; the runtime image is distroless "
      "(gcr.io/distroless/cc-debian12). No shell inside: use `kubectl debug` when you need one."),
    M("x_docker_local", "docker build",
      "Build an image locally: `docker build -f deploy/Dockerfile --build-arg BIN=loam-api -t loam-api:dev .`"),
    M("x_announce", "deploy process",
      "After a prod deploy, post the tag and the changelog link in #loam-releases. Support reads that "
      "channel."),
    M("x_dark_launch", "deploy featureflags process",
      "Risky features ship dark behind an org-level flag and are switched on for the demo org first, then "
      "one pilot customer."),
    M("x_staging_reset", "deploy staging database",
      "The staging DB is reset from an anonymised prod snapshot every Monday at 04:00 UTC. Don't keep test "
      "data there that you need next week."),
    M("x_preview", "deploy web",
      "PRs with the `preview` label get a preview at pr-<n>.preview.loam.dev (dashboard only; it talks to "
      "the staging API)."),
    M("x_kubectl_ctx", "deploy ops gotcha",
      "kubectl contexts are `stg` and `prd`, namespaces loam-staging and loam-prod. Check `kubectl config "
      "current-context` before anything destructive."),
    M("x_release_steps", "deploy release process",
      "Release checklist for prod:\n\n1. main is green and staging has run that commit for at least a day.\n"
      "2. `make release VERSION=1.14.0` bumps versions, moves the changelog, creates the tag.\n"
      "3. `git push --follow-tags`; release.yml builds and pushes the images and the gateway artifact.\n"
      "4. Approve the loam-prod sync in Argo CD and watch the canary dashboard.\n"
      "5. Post in #loam-releases.",
      updated=True),
    M("x_corr_init_container", "correction deploy migrations",
      "Correction: migrations no longer run in an init container of the API pod. They run in the Helm "
      "pre-upgrade hook Job now.",
      late=True),
    M("x_deploy_gateway_first", "deploy gateway",
      "When an API change and a firmware change go together, deploy the API first and keep it accepting the "
      "old payload; the fleet takes a week to update."),

    # --- observability -------------------------------------------------------------------------------
    M("o_metrics", "observability metrics conventions",
      "Metrics are Prometheus format on the admin port 9464 (/metrics). Names start with loam_; counters end "
      "in _total, durations in _seconds."),
    M("o_tracing", "observability logging",
      "Logging is `tracing` with structured fields (`info!(sensor_id = %id, \"reading dropped\")`), not "
      "formatted strings. LOAM_LOG sets the filter in EnvFilter syntax, e.g. LOAM_LOG=info,loam::ingest=debug."),
    M("o_otel", "observability tracing",
      "With the `otel` feature, traces go over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (Tempo in prod). Sampling "
      "is 10% in prod, 100% in staging."),
    M("o_grafana", "observability grafana",
      "Grafana dashboards are provisioned from deploy/grafana/dashboards/*.json. Edit in Grafana, export the "
      "JSON, commit it -- manual edits in prod Grafana get overwritten on the next sync."),
    M("o_alert_rules", "observability alerts ops",
      "Prometheus alert rules live in deploy/prometheus/rules/*.yaml. Each alert needs a runbook_url "
      "annotation pointing into docs/runbooks/."),
    M("o_levels", "logging conventions",
      "Log levels: error = someone must act, warn = unexpected but handled, info = lifecycle events only. "
      "Per-reading logs are debug at most; prod ingests ~2k readings/s."),
    M("o_no_pii", "logging security",
      "Never log emails, phone numbers or API keys. Wrap them in loam_core::Redacted<T>, which prints ***."),
    M("o_oncall", "ops oncall",
      "On-call is the PagerDuty rotation loam-primary. An ingest-lag page at night is real; the disk-space "
      "warning usually isn't (the volume autoscales)."),
    M("o_sentry_backend", "observability config",
      "Backend panics go to Sentry when SENTRY_DSN is set. Leave it unset locally."),
    M("o_corr_port", "correction observability ports",
      "Correction: the metrics port is 9464, not 9090. 9090 is Prometheus itself in the compose obs profile.",
      late=True),
    M("o_json_logs", "logging config",
      "In staging and prod logs are JSON lines (LOAM_LOG_FORMAT=json, set by LOAM_ENV); locally they're "
      "pretty. Query them in Loki with `{app=\"loam-api\"} | json | level=\"error\"`."),

    # --- configuration -------------------------------------------------------------------------------
    M("k_file", "config env",
      "Config is loam.toml (path from LOAM_CONFIG, default ./loam.toml) with env overrides named "
      "LOAM_<SECTION>__<KEY> -- double underscore -- e.g. LOAM_INGEST__BATCH_SIZE=1000."),
    M("k_validate", "config errors",
      "Config is validated at startup (Config::validate). A missing key fails with ConfigError::MissingKey "
      "naming the dotted key. Add a default in config/defaults.toml rather than making the field an Option."),
    M("k_secrets", "config security",
      "Secrets (LOAM_JWT_SECRET, SMTP_PASSWORD, TWILIO_AUTH_TOKEN, SENTRY_DSN, INSIGHTS_API_KEY) only come "
      "from the environment, never from loam.toml -- the loader rejects them there."),
    M("k_example", "config docs",
      "loam.example.toml documents every key with its default. Update it in the same PR as a new key; a "
      "test compares it with the Config struct."),
    M("k_loam_env", "config conventions",
      "LOAM_ENV is dev, staging or prod. It only changes defaults (JSON logs outside dev), never behaviour: "
      "don't branch on it in code."),
    M("k_durations", "config conventions",
      "Durations in config are integers with the unit in the key (`_ms`, `_secs`), never strings like "
      "\"5m\"."),
    M("k_deny_unknown", "serde conventions config api",
      "Use #[serde(deny_unknown_fields)] on config structs (a typo in loam.toml should fail), never on API "
      "request bodies (clients add fields)."),
    M("k_reload", "config gotcha",
      "The services read loam.toml once at startup -- there's no hot reload. After changing a ConfigMap, "
      "restart the deployment (`kubectl rollout restart deploy/loam-api`)."),

    # --- conventions ---------------------------------------------------------------------------------
    M("n_errors", "errors conventions",
      "Library code returns thiserror enums, one per module (StorageError, IngestError, AlertError, "
      "ApiError); anyhow only in src/bin/ and xtask.",
      type="pattern"),
    M("n_unwrap", "conventions errors preference",
      "No unwrap() outside tests. Use expect(\"why this can't fail\") when it really can't; otherwise "
      "propagate. clippy::unwrap_used is denied in the library code."),
    M("n_modules", "conventions rust",
      "One module per file and no mod.rs (foo.rs next to foo/). Unit tests go in `#[cfg(test)] mod tests` "
      "at the bottom of the file."),
    M("n_naming", "conventions naming",
      "Types are nouns (ReadingBatch), functions are verbs (insert_batch). No Manager/Helper/Util suffixes."),
    M("n_await_lock", "rust async gotcha",
      "Don't hold a std::sync::Mutex guard across an .await; use tokio::sync::Mutex or restructure. "
      "clippy::await_holding_lock catches most cases."),
    M("n_newtypes", "conventions rust",
      "Ids are newtypes (SensorId, OrgId, GatewayId, FieldId) in core/src/ids.rs. Don't pass raw Uuid or "
      "String in signatures."),
    M("n_missing_docs", "docs conventions",
      "Every public item of loam-core needs a doc comment: #![warn(missing_docs)] is on there (and only "
      "there)."),
    M("n_comments_why", "preference",
      "User prefers comments that explain why, not what. Delete comments that restate the code."),
    M("n_feature_mod", "rust features conventions",
      "Code behind a cargo feature goes in its own module, with #[cfg(feature = \"...\")] on the `mod` line "
      "instead of sprinkled through functions."),
    M("n_chrono", "conventions dependencies time",
      "Dates and times use chrono (with the serde feature). Don't add the `time` crate alongside it."),
    M("n_spawn", "rust async pattern",
      "Background tasks are spawned through `TaskSet::spawn_named` (src/runtime.rs) so they are joined on "
      "shutdown and show up by name in tokio-console. Bare tokio::spawn is flagged in review."),
    M("n_shutdown", "rust async",
      "Graceful shutdown: SIGTERM cancels the CancellationToken, the API stops accepting, ingest finishes "
      "its current COPY and acks, then exits. k8s gives us 30 s (terminationGracePeriodSeconds)."),
    M("n_builder", "pattern rust",
      "Structs with more than ~4 optional settings get a builder (TestApp::builder(), AlertRule::builder()) "
      "instead of a constructor with Option arguments."),
    M("n_pub_crate", "rust conventions",
      "Default to pub(crate); only make something pub when another crate of the workspace uses it."),

    # --- git and process -----------------------------------------------------------------------------
    M("p_branches", "git conventions",
      "Branch names: <type>/<short-desc>, e.g. fix/ingest-dedup or feat/alert-quiet-hours. Types: feat, "
      "fix, chore, docs, refactor."),
    M("p_commit_msgs", "git conventions",
      "Commit messages: imperative subject of at most 72 characters, a body that says why. No "
      "conventional-commit prefixes -- we tried them and dropped them."),
    M("p_rebase", "git preference",
      "User prefers rebasing a feature branch onto main over merging main into it. main itself is "
      "squash-merge only."),
    M("p_pr_size", "process review",
      "Keep PRs under ~400 changed lines, not counting generated files (.sqlx/, openapi/loam.yaml, "
      "types.ts). Split bigger work into stacked PRs."),
    M("p_codeowners", "process review people",
      "CODEOWNERS: Marta owns storage and migrations, Jonas the gateway, Priya the dashboard. A migration "
      "PR needs Marta's approval."),
    M("p_changelog", "process changelog release",
      "Every user-visible change adds a line under `## Unreleased` in CHANGELOG.md. `make release` moves "
      "those lines under the new version."),
    M("p_how_tested", "process review",
      "The PR template asks 'How tested'. Put the exact commands you ran -- reviewers copy them."),
    M("p_draft", "process",
      "Open PRs as drafts until CI is green; reviewers skip drafts."),
    M("p_adr", "docs process decision",
      "Decision: big architecture choices also get an ADR in docs/adr/NNNN-title.md with a status line "
      "(proposed, accepted, superseded)."),
    M("p_issue_refs", "git process",
      "Reference the issue in the PR body with 'Closes #N', not in the commit subject."),
    M("p_force_push", "git gotcha",
      "Never force-push to main or release/* branches. They're protected for people, but the release bot's "
      "token can bypass it."),
    M("p_no_emoji", "preference git",
      "No emoji in commit messages or code comments."),
    M("p_plan_first", "preference process",
      "User wants a short plan before a change that touches more than one crate, and asks before large "
      "refactors."),
    M("p_small_commits", "preference git",
      "User likes small, focused commits -- one logical change each, so that bisect stays useful."),
    M("p_perf_table", "preference review",
      "For performance PRs the user likes a before/after table in the description (median and p99)."),
    M("p_review_turnaround", "process review",
      "Reviews are expected within one working day; ping in #loam-dev if a PR waited longer."),

    # --- alerts --------------------------------------------------------------------------------------
    M("al_rules", "alerts",
      "Alert rules are per sensor or per field: a threshold (above/below) held for a duration, e.g. moisture "
      "below 18% for 2 h. They're stored in alert_rules and loam-alerts evaluates them every minute."),
    M("al_quiet_hours", "alerts config",
      "Quiet hours (alerts.quiet_hours per org, e.g. 22:00-06:00 in the org's timezone) delay SMS but not "
      "email. Rules marked critical ignore quiet hours."),
    M("al_twilio", "alerts sms",
      "SMS are sent through Twilio (TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN). In dev and staging the Twilio "
      "test credentials are used, so nothing is delivered."),
    M("al_renotify", "alerts",
      "An alert that is already open doesn't notify again; it re-notifies after "
      "alerts.renotify_after_secs (default 21600, i.e. 6 h) while it keeps firing."),
    M("al_resolution", "alerts database",
      "Rules with a duration of 6 h or more are evaluated on readings_hourly, shorter ones on raw readings. "
      "So 'below 15% for 1 h' needs raw data within retention."),
    M("al_errors", "alerts errors",
      "AlertError::Notify is retried 3 times with backoff. AlertError::Rule (a broken rule config) is not "
      "retried: the rule is marked invalid and the UI shows why."),
    M("al_ack", "alerts",
      "Operators acknowledge alerts from the dashboard or by replying ACK to the SMS (Twilio webhook POST "
      "/v1/webhooks/sms)."),
    M("al_email_from", "alerts email config",
      "Alert emails are sent from alerts@loam.dev through SES in prod (SMTP_HOST from the secret). Don't "
      "change the from address: customers whitelisted it."),

    # --- insights (LLM) ------------------------------------------------------------------------------
    M("in_feature", "insights llm",
      "Weekly field insights: with the `insights` feature the service asks an LLM to summarise each field's "
      "week (moisture trend, anomalies). Off by default, on for orgs with the insights flag."),
    M("in_max_tokens", "insights llm config",
      "insights.max_tokens is 800: at 400 summaries got cut off mid-sentence. Don't go above 1200, the cost "
      "per org grows with it."),
    M("in_prompt", "insights llm",
      "insights.model is set per environment; staging uses the cheap model. The prompt is "
      "src/insights/prompts/weekly.md and is versioned with the code -- change it in a PR like code."),
    M("in_no_pii", "insights security preference",
      "Never send farm names, coordinates or user emails to the LLM: only sensor aggregates and the field's "
      "label."),
    M("in_timeout", "insights errors",
      "LLM calls time out after 30 s (insights.timeout_secs) and are retried once. If it still fails the "
      "week has no summary; users don't see an error."),
    M("in_eval", "insights testing",
      "Prompt changes are checked with `cargo xtask insights-eval`, which runs the prompt on 20 recorded "
      "field-weeks in tests/fixtures/insights/ and prints a diff of the summaries."),

    # --- security and auth ---------------------------------------------------------------------------
    M("s_jwt", "auth security",
      "Dashboard JWTs expire after 12 h, refresh tokens after 30 days; signed HS256 with LOAM_JWT_SECRET. "
      "Rotating that secret logs everybody out."),
    M("s_api_keys", "auth security gateway",
      "API keys are stored hashed (argon2); the plaintext is shown once. `loam-admin keys rotate --gateway "
      "<id>` issues a new key and keeps the old one valid for 24 h."),
    M("s_roles", "auth rbac",
      "Roles: viewer, operator (acknowledges alerts, edits rules), admin (users, keys, billing). Handlers "
      "check with `require_role(Role::Operator)`."),
    M("s_gitleaks", "security ci",
      "gitleaks runs as a pre-commit hook and in CI. If it flags a test fixture, add the fingerprint to "
      ".gitleaksignore instead of disabling the rule."),
    M("s_audit", "security dependencies",
      "`cargo audit` runs nightly and opens an issue for a new advisory. Fix it, or ignore it with a reason "
      "in .cargo/audit.toml, within a week."),
    M("s_password_reset", "auth",
      "Password reset links are single-use and expire after 30 min; the token is stored hashed like API "
      "keys."),

    # --- performance ---------------------------------------------------------------------------------
    M("f_flamegraph", "performance profiling",
      "Profile ingest with `cargo flamegraph --bin loam-ingest -- --replay "
      "tests/fixtures/payloads/day.ndjson`. Needs perf, and `debug = 1` in [profile.release] while you "
      "profile (don't commit that)."),
    M("f_throughput", "performance ingest benchmarks",
      "Ingest target: 5k readings/s per replica. The criterion bench ingest_throughput should stay above "
      "8k/s on a laptop."),
    M("f_decode_alloc", "performance ingest",
      "Payload decoding used to allocate per reading; reusing one Vec in the decoder halved ingest CPU. Keep "
      "the hot decode loop allocation-free."),
    M("f_jemalloc", "performance memory",
      "The API and ingest binaries use jemalloc (tikv-jemallocator). The gateway doesn't -- the overhead "
      "matters on 512 MB devices."),
    M("f_n_plus_one", "performance database api",
      "The sensors list page had an N+1: one query per sensor for its last reading. Use "
      "storage::readings::latest_for_sensors (one query with DISTINCT ON) for lists."),
    M("f_tokio_console", "performance debugging",
      "To debug a stuck task: build with RUSTFLAGS=\"--cfg tokio_unstable\" and the `console` feature, then "
      "run `tokio-console` against port 6669."),

    # --- team, context, preferences --------------------------------------------------------------------
    M("u_team", "context team",
      "Team: Marta (backend, storage), Jonas (gateway and firmware), Priya (frontend), Sam (ops, on-call "
      "lead), Lena (PM). Customers are farm cooperatives in Chile and Spain.",
      type="core_context", protected=True),
    M("u_english", "preference docs",
      "Write code comments and docs in English, even though half the team speaks Spanish."),
    M("u_old_name", "context naming",
      "The product is Loam; crate and binary names are lower-case `loam`. Old docs say SoilSync -- that was "
      "the previous name, don't use it in new code."),
    M("u_ask_units", "preference sensors",
      "User asks that every number in a UI label or alert message carries its unit (18 %, 21.5 °C), no "
      "bare numbers."),
    M("u_short_answers", "preference",
      "User likes short answers with the command first, explanation after."),
    M("u_sam_ops", "context ops people",
      "Ask Sam before touching anything in deploy/ that affects prod (Argo apps, secrets, alert rules)."),
    M("u_lena_scope", "context people",
      "Lena (PM) decides what's in scope for a release; feature requests from customers go to her, not "
      "straight into a PR."),

    # --- domain --------------------------------------------------------------------------------------
    M("y_fields_sites", "domain context",
      "A 'field' is a group of sensors on one plot; a 'site' groups the fields of one farm. Readings belong "
      "to sensors, not fields -- a field is just a view over its sensors."),
    M("y_depths", "domain sensors",
      "Probes measure at 10, 30 and 60 cm. The depth is part of the sensor (one sensor id per depth), not "
      "an attribute of a reading."),
    M("y_org_tz", "domain time",
      "Each org has a timezone (IANA name, e.g. America/Santiago). Daily aggregates are computed in that "
      "zone, hourly ones in UTC."),
    M("y_models", "sensors domain",
      "Supported sensor models: TM-40 (moisture and temperature), TM-41 (adds electrical conductivity), and "
      "the old Decagon 5TE through the legacy bridge."),
    M("y_ec_units", "sensors units",
      "Electrical conductivity (TM-41 only) is stored in dS/m. Some customers think in mS/cm -- same "
      "number, just label it dS/m."),
    M("y_wilting_point", "domain alerts",
      "Agronomists set alert thresholds relative to the field's wilting point and field capacity, stored on "
      "the field (wilting_point_pct, field_capacity_pct)."),

    # --- assorted, added over time ---------------------------------------------------------------------
    M("z_clippy_pedantic", "lint rust",
      "clippy::pedantic is not enabled; don't send PRs that only fix pedantic lints."),
    M("z_todo_format", "conventions",
      "TODOs must name an owner, `// TODO(marta): ...`, and say what is left to do. Bare TODOs fail the "
      "lint script."),
    M("z_makefile_tabs", "make gotcha",
      "Makefile recipes need real tabs. The editorconfig sets that for Makefile, but some editors ignore it: "
      "'missing separator' means spaces."),
    M("z_scripts_dir", "dev",
      "One-off scripts go in scripts/ (bash, with `set -euo pipefail`); anything we run twice becomes an "
      "xtask command."),
    M("z_docs_site", "docs",
      "The docs site is mdBook in docs/ (`mdbook serve docs` on port 3001). The API reference page is built "
      "from openapi/loam.yaml."),
    M("z_license_headers", "conventions",
      "No license headers in source files; the LICENSE file covers everything."),
    M("z_admin_cli", "ops",
      "loam-admin is the operator CLI (src/bin/loam-admin.rs): orgs, users, gateways, keys. Run it in prod "
      "through `kubectl exec deploy/loam-api -- loam-admin ...`."),
    M("z_feature_request_sms_voice", "context alerts",
      "Customers asked for voice calls on critical alerts; it's on the backlog, not planned."),
    M("z_sensor_swap", "sensors ops",
      "When a farm swaps a broken probe, the new probe gets a new sensor id. Link it to the old one with "
      "`loam-admin sensors replace <old> <new>` so the field's chart stays continuous."),
    M("z_decay_1", "_consolidated _auto_decay",
      "Consolidated 3 old memories:\n\n- The first prototype stored readings in InfluxDB [tags: context, "
      "history]\n- Dashboard v0 was a Grafana board named soilsync-dev [tags: context]\n- Gateways used to "
      "post CSV files over HTTP [tags: gateway, history]",
      auto_decay=True),
    M("z_decay_2", "_consolidated _auto_decay",
      "Consolidated 2 old memories:\n\n- Use `make up` to start the stack (renamed to make dev) [tags: dev]\n"
      "- Staging used to be deployed by hand with helm upgrade [tags: deploy]",
      auto_decay=True),
    M("z_heroku_history", "context history",
      "Before kubernetes the API ran on Heroku; some old runbooks still mention `heroku logs`. Ignore them."),
    M("z_locale_dates", "web i18n gotcha",
      "Dates in the UI use the user's locale for formatting but the org's timezone for the values -- mixing "
      "the two up caused the 'yesterday's readings shown as today' bug in Chile."),
    M("z_timeouts_http", "api gateway",
      "The gateway's HTTP client uses a 20 s request timeout and 5 s connect timeout; rural uplinks are "
      "slow, don't lower them."),
    M("z_retry_after", "gateway api",
      "On 429 and 503 the gateway waits for Retry-After (retryAfterMs in the gateway's backoff state) "
      "before the next upload instead of its own exponential backoff."),
    M("z_max_retries", "gateway config",
      "gateway.max_upload_retries is unlimited (0) by default: a gateway keeps retrying forever while its "
      "buffer has room."),
    M("z_editor", "dev preference",
      "I work in VS Code with rust-analyzer; `rust-analyzer.cargo.features` is set to [\"test-db\"] in the "
      "workspace settings so the DB tests get analysed."),
    M("z_ra_slow", "dev gotcha",
      "rust-analyzer gets slow when the `insights` feature is on (big generated client). Leave it out of "
      "rust-analyzer.cargo.features unless you work on insights."),
    M("z_pr_labels", "process ci",
      "PR labels: `preview` (preview env), `needs-migration` (reminds the deployer), `skip-changelog` (for "
      "internal changes)."),
    M("z_grafana_readings", "observability grafana ingest",
      "The 'Ingest' Grafana dashboard has lag, throughput, dropped batches and DLQ rate per org. Start there "
      "when a customer says readings are missing."),
    M("z_missing_readings_runbook", "ops ingest gateway",
      "Customer says readings are missing: 1) is the gateway uploading (last_seen in the admin panel)? 2) "
      "is ingest lagging (Grafana 'Ingest')? 3) anything in readings.dlq for that org? 4) is the sensor "
      "soft-deleted?"),
    M("z_csv_format", "api export",
      "CSV export columns: sensor_id, observed_at (ISO 8601 UTC), moisture_pct, temperature_c, ec_ds_m, "
      "quality. Semicolon-separated when the user's locale is es (Excel in Spain)."),
    M("z_billing", "context scope",
      "Billing is per active sensor per month, handled outside Loam (the sales team's invoicing). Loam only "
      "exports the active-sensor count via `loam-admin orgs usage`."),
    M("z_s3_exports", "api config",
      "Exports larger than 50 MB are written to the loam-exports bucket and the user gets a signed link by "
      "email (valid 24 h) instead of a streamed response."),
    M("z_gateway_config_push", "gateway config",
      "Config pushes reach a gateway on its next upload (the API answers with the new config version); an "
      "offline gateway gets it when it reconnects."),
    M("z_unit_test_db_pref", "preference testing database",
      "User prefers real Postgres in tests over mocking the repository layer; mocks only at the HTTP "
      "boundary (Twilio, the LLM API)."),
    M("z_lint_sql", "database lint",
      "SQL in migrations is formatted with sqlfluff (`make lint-sql`), dialect postgres. It's not in CI yet, "
      "but please run it."),
    M("z_web_env_local", "web config",
      "For a dashboard against staging locally: create web/.env.local with VITE_API_BASE_URL="
      "https://api.staging.loam.dev and run `npm run dev -- --mode staging`."),
    M("z_e2e_flaky_login", "e2e testing flaky",
      "The Playwright login test is flaky on slow machines because of the 2 s cookie refresh; rerun once "
      "before digging. It has `test.describe.configure({ retries: 2 })`."),
    M("z_api_versions_header", "api versioning",
      "Every response carries X-Loam-Api-Version with the server build (e.g. 1.14.0+3f2a9c1); handy when a "
      "customer's bug report includes headers."),
    M("z_tracing_span_names", "observability tracing conventions",
      "Span names are `module.action` (`ingest.copy`, `api.readings.list`). Put ids on spans as fields, "
      "never in the name."),
    M("z_uplot_gotcha", "web gotcha",
      "uPlot wants timestamps in seconds, not milliseconds; Date.getTime() values make every chart show "
      "the year 50000-something."),
    M("z_timescale_version", "database timescale",
      "Prod runs TimescaleDB 2.14 on Postgres 16. Continuous aggregates use the new finalized format, so "
      "don't copy examples from pre-2.7 blog posts."),
    M("z_hourly_refresh", "database timescale",
      "readings_hourly is refreshed by a policy every 15 min for the last 3 days. After a backfill run "
      "`CALL refresh_continuous_aggregate('readings_hourly', <from>, <to>)` by hand."),
    M("z_corr_page_size", "correction api pagination",
      "Correction: api.max_page_size is 200. I saved 500 earlier by mistake; 500 was only ever the export "
      "batch size.",
      late=True),
    M("z_corr_retention", "correction database retention",
      "Correction on retention: raw readings are kept 90 days for every org; the 180-day plan for the "
      "premium tier never shipped.",
      late=True),
    M("z_ingest_replicas", "ingest deploy config",
      "Prod runs 4 ingest replicas (values-prod.yaml, ingest.replicas); staging runs 1. HPA scales ingest "
      "on loam_ingest_lag_seconds, not CPU."),
    M("z_alerts_singleton", "alerts deploy gotcha",
      "loam-alerts must run as a single replica: the evaluator isn't leader-elected yet, two replicas send "
      "every SMS twice."),
    M("z_api_replicas", "api deploy config",
      "The API runs 3 replicas in prod; the in-process rate limiter divides the per-key limit by "
      "LOAM_API_REPLICAS, so keep that env var in sync when scaling."),
]
