#!/usr/bin/env bash
# Checks, against a real Claude Code, that the .claude/settings.json `kb hooks install claude`
# writes is one Claude Code loads and runs, next to a person's own settings and hooks
# (docs/hooks.md, Checked against a real agent).
#
# No login and no network are needed: Claude Code runs its SessionStart, UserPromptSubmit and
# SessionEnd hooks around a `claude -p` whose API call fails at once (a fake key, an API address
# that refuses connections, no retries). A stand-in `kb` on PATH records each call; the check
# passes when Claude Code called it for each of those three events and ran the person's hook too.
# PreCompact needs a conversation to compact, which needs a model: it is not checked here.
#
# Usage: scripts/check-claude-settings.sh
#   CLAUDE=path/to/claude  the Claude Code binary (default: `claude` on PATH, then
#                          /tmp/cc/node_modules/.bin/claude, where
#                          `npm install --prefix /tmp/cc @anthropic-ai/claude-code` puts it)
#   KB=path/to/kb          the kb that installs the hooks (default: target/debug/kb, built)
# Without a Claude Code binary it prints a `SKIPPED:` line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

claude=${CLAUDE:-$(command -v claude || echo /tmp/cc/node_modules/.bin/claude)}
if [ ! -x "$claude" ]; then
  echo "SKIPPED: check-claude-settings: no Claude Code binary (npm install --prefix /tmp/cc @anthropic-ai/claude-code, or set CLAUDE)"
  exit 0
fi
kb=${KB:-target/debug/kb}
if [ -z "${KB:-}" ]; then
  cargo build --quiet
fi
kb=$(cd "$(dirname "$kb")" && pwd)/$(basename "$kb")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo/.git" "$tmp/repo/.claude" "$tmp/bin" "$tmp/home"
log=$tmp/calls.log

# A person's settings: another key, a hook of their own on an event kb hooks too.
cat >"$tmp/repo/.claude/settings.json" <<EOF
{
    "permissions": {"allow": ["Bash(cargo test:*)"]},
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo person >> $log"}]}
        ]
    }
}
EOF
KB_ROOT="$tmp/repo" "$kb" hooks install claude >/dev/null 2>&1

# The stand-in kb: one line per call, with its arguments.
cat >"$tmp/bin/kb" <<EOF
#!/bin/sh
cat >/dev/null
echo "\$*" >> $log
EOF
chmod +x "$tmp/bin/kb"

echo "Claude Code $("$claude" --version 2>/dev/null | head -n 1)"
(
  cd "$tmp/repo"
  HOME=$tmp/home PATH=$tmp/bin:/usr/bin:/bin ANTHROPIC_API_KEY=sk-ant-not-a-key \
    ANTHROPIC_BASE_URL=http://127.0.0.1:9 CLAUDE_CODE_MAX_RETRIES=0 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 \
    timeout 120 "$claude" -p "hello" >/dev/null 2>&1 || true
)

status=0
for want in person "hook session-start --agent claude" "hook prompt --agent claude" "hook session-end --agent claude"; do
  if grep -qxF "$want" "$log" 2>/dev/null; then
    echo "ok: Claude Code ran: $want"
  else
    echo "FAILED: Claude Code did not run: $want" >&2
    status=1
  fi
done
exit "$status"
