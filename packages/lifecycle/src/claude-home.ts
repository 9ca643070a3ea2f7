import { BOX_USER, engine } from '@ca-sandbox/docker';
import { CLAUDE_KEY_PLACEHOLDER } from './credentials.js';

/**
 * Claude Code's state file in a `--with-claude` box whose gateway adds the key (HOME=/tmp, the
 * box's tmpfs: written at every box start, the box user's, as Claude Code rewrites it). Without
 * it Claude Code's first start runs its onboarding, whose connectivity check asks a host the box
 * may not reach (platform.claude.com) and gives up, then asks whether to use the API key it found:
 * the placeholder, approved here (Claude Code keys approvals by the last 20 characters).
 */
export function claudeHomeState(): string {
  return `${JSON.stringify({
    hasCompletedOnboarding: true,
    customApiKeyResponses: { approved: [CLAUDE_KEY_PLACEHOLDER.slice(-20)], rejected: [] },
  })}\n`;
}

/** Writes claudeHomeState into a started box unless Claude Code already has a state file there. */
export async function writeClaudeHome(container: string): Promise<void> {
  const script = 'umask 077; [ -e /tmp/.claude.json ] || cat > /tmp/.claude.json';
  await engine.exec.internal(container, ['/bin/sh', '-c', script], {
    user: BOX_USER,
    stdin: true,
    input: claudeHomeState(),
    timeoutMs: 15_000,
  });
}
