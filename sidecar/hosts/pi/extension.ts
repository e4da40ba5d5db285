// sidecar: Pi's session events into the workspace's inbox.
// Written by `sidecar integrate pi`; it holds no machine-specific path, so a project may commit
// it, and it does nothing in a folder that is not a registered sidecar workspace.
//
// Pi awaits every extension handler with no timeout, so a handler that hung would hang Pi: each
// one here writes synchronously (a dotfile renamed to *.json) and returns. Pi's events carry no
// session id or folder; both come from the handler's context, and the session file is the
// transcript. A Pi that dies of a signal it does not handle (SIGINT in `pi -p`, SIGTERM or
// SIGHUP in its terminal UI, SIGKILL) sends no session_shutdown: every event names this
// process, and sidecar ends its sessions when the process is gone.
//
// The writer below (sidecar's inbox_writer.js, put here at install) writes only into a
// workspace this machine's user registered, and never through a symlink.

// sidecar: the inbox writer goes here

// The last assistant message of a prompt, whose stopReason says how the prompt ended.
function lastAssistant(messages) {
  const list = Array.isArray(messages) ? messages : []
  for (let i = list.length - 1; i >= 0; i--) {
    if (list[i] && list[i].role === "assistant") return list[i]
  }
  return undefined
}

// The text of an assistant message (its text parts, in order), as its turn end carries it.
function answerText(message) {
  const parts = message && Array.isArray(message.content) ? message.content : []
  return parts.filter((part) => part && part.type === "text" && typeof part.text === "string")
    .map((part) => part.text).join("\n").slice(0, 4000)
}

export default function sidecar(pi) {
  const write = inboxWriter("pi")

  // One event for the session the context is on; none for a session Pi keeps no file of
  // (`--no-session`): nothing could resume it.
  const drop = (name, ctx, extra = {}) => {
    try {
      const manager = ctx && ctx.sessionManager
      const id = manager && manager.getSessionId()
      const file = manager && manager.getSessionFile()
      if (typeof id !== "string" || !id || typeof file !== "string" || !file) return
      write(ctx.cwd || process.cwd(), { event: name, session_id: id, transcript_path: file,
                                        ...extra })
    } catch {} // an extension must never break the agent
  }

  pi.on("session_start", (event, ctx) => {
    drop("session_start", ctx, { source: event.reason })
  })
  // Once per prompt, and again for each of Pi's own retries of a failed one.
  pi.on("agent_start", (event, ctx) => {
    drop("agent_start", ctx)
  })
  pi.on("tool_execution_end", (event, ctx) => {
    drop("tool_execution_end", ctx, { tool_name: event.toolName })
  })
  // A prompt that ended well is a turn's end. One the API refused (`error`: Pi may retry it,
  // and the session file tells at the session's end how it failed) or the user stopped
  // (`aborted`) is only traced: its turn stays open, as it is.
  pi.on("agent_end", (event, ctx) => {
    const last = lastAssistant(event.messages)
    const stop = last && last.stopReason
    if (stop === "error" || stop === "aborted") {
      drop(`agent_end:${stop}`, ctx, { error_message: String(last.errorMessage || "") })
    } else {
      drop("agent_end", ctx, { last_assistant_message: answerText(last) })
    }
  })
  // `reload` keeps the session (the extensions are loaded again); `new`, `resume` and `fork`
  // end it, and a session_start of the next one follows.
  pi.on("session_shutdown", (event, ctx) => {
    if (event.reason !== "reload") drop("session_shutdown", ctx, { reason: event.reason })
  })
}
