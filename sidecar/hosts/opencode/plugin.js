// sidecar: @HOST@'s session events into the workspace's inbox.
// Written by `sidecar integrate @HOST@`; it holds no machine-specific path, so a project may
// commit it, and it does nothing in a folder that is not a sidecar workspace (no .context/).
//
// Every write is synchronous (write a dotfile, rename it to *.json): opencode exits about
// 50 ms after its last event and does not wait for a plugin's async work. opencode sends no
// session end in `opencode run`; the end is written from the process's exit listener, which
// runs on a normal exit. A killed opencode runs nothing: sidecar watches its process instead.
//
// The writer below (sidecar's inbox_writer.js, put here at install) writes only into a
// workspace this machine's user registered, and never through a symlink.

// sidecar: the inbox writer goes here

export const SidecarPlugin = async ({ directory }) => {
  const home = directory || process.env.PWD || process.cwd()
  const sessions = new Map() // session id -> its directory, for the end written at exit
  const busy = new Set() // sessions in a turn: opencode repeats `busy` within one
  const write = inboxWriter("@HOST@")

  const drop = (event, sessionID, extra = {}) => {
    if (typeof sessionID !== "string" || !sessionID) return
    write(sessions.get(sessionID) || home, { event, session_id: sessionID, ...extra })
  }

  const seen = (sessionID, dir) => {
    if (typeof sessionID !== "string" || !sessionID) return false
    const known = sessions.has(sessionID)
    if (dir || !known) sessions.set(sessionID, dir || sessions.get(sessionID) || home)
    return !known
  }

  process.on("exit", (code) => {
    for (const id of sessions.keys()) drop("session-end", id, { reason: code ? `exit ${code}` : "exit" })
  })

  return {
    event: async ({ event }) => {
      const props = event.properties || {}
      const id = props.sessionID || (props.info && props.info.id)
      const dir = props.info && props.info.directory
      if (event.type === "session.created") {
        seen(id, dir)
        drop("session-start", id, { source: "startup", hostEvent: event.type })
        return
      }
      if (seen(id, dir)) drop("session-start", id, { source: "resume", hostEvent: event.type })
      const status = event.type === "session.status" && props.status ? props.status.type : null
      if (status === "idle" && busy.delete(id)) {
        drop("turn-end", id, { hostEvent: event.type })
      } else if (status === "busy" && !busy.has(id)) {
        busy.add(id)
        drop("turn-start", id, { hostEvent: event.type })
      } else if (event.type === "session.error") {
        // A turn the API refused, after opencode's own retries: a 429 is a usage limit.
        const error = props.error || {}
        const data = error.data || {}
        const kind = data.statusCode === 429 ? "rate_limit" : error.name || "error"
        drop("turn-failed", id, { error: kind, error_message: String(data.message || ""),
                                  hostEvent: event.type })
      } else if (event.type === "permission.asked" || event.type === "permission.updated") {
        // It asks the user to allow a tool (1.18: permission.asked; older: permission.updated).
        // The tool's run, or the turn's end, follows the answer.
        const patterns = Array.isArray(props.patterns) ? props.patterns : [props.pattern]
        const asked = [props.permission || props.type, patterns.filter(Boolean).join(" ")]
        drop("needs-input", id, { notification_type: "permission", hostEvent: event.type,
                                  message: String(props.title || asked.filter(Boolean).join(": ")).slice(0, 500) })
      }
    },
    "tool.execute.after": async (input) => {
      if (seen(input.sessionID)) drop("session-start", input.sessionID, { source: "resume" })
      drop("tool-use", input.sessionID, { tool_name: input.tool })
    },
  }
}
