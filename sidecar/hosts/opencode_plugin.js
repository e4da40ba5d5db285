// sidecar: opencode's session events into the workspace's inbox.
// Written by `sidecar integrate opencode`; it holds no machine-specific path, so a project may
// commit it, and it does nothing in a folder that is not a sidecar workspace (no .context/).
//
// Every write is synchronous (write a dotfile, rename it to *.json): opencode exits about
// 50 ms after its last event and does not wait for a plugin's async work. opencode sends no
// session end in `opencode run`; the end is written from the process's exit listener, which
// runs on a normal exit. A killed opencode runs nothing: sidecar watches its process instead.
//
// It writes only into a workspace this machine's user initialised (`sidecar init` put it in
// their registry), never into a `.context/` that came with a clone, and never through a
// symlink: each folder from `.context` down is opened with O_NOFOLLOW and the next one is
// reached through the descriptor (/proc/self/fd), so a folder swapped for a link is refused.
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

const HOST = "opencode"

// This process and its start time (clock ticks since boot): sidecar watches it, so a killed
// opencode's sessions end too; a reused pid is told apart by the start time.
function startTime() {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19])
  } catch {
    return undefined
  }
}

function findWorkspace(start) {
  let dir = path.resolve(start)
  for (;;) {
    try {
      if (fs.statSync(path.join(dir, ".context")).isDirectory()) return dir
    } catch {}
    const parent = path.dirname(dir)
    if (parent === dir) return null
    dir = parent
  }
}

function registryFile() {
  const env = process.env
  const home = env.SIDECAR_CONFIG_HOME ||
    path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config"), "sidecar")
  return path.join(home, "workspaces.json")
}

function registered(root) {
  try {
    const roots = JSON.parse(fs.readFileSync(registryFile(), "utf8")).workspaces
    return Array.isArray(roots) && roots.includes(fs.realpathSync(root))
  } catch {
    return false
  }
}

const C = fs.constants
const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW
const VIA_FD = fs.existsSync("/proc/self/fd")
let warned = false

// The inbox as a path that names the folder itself (/proc/self/fd/N), reached without
// following a link; null (said once on stderr) where a folder is a symlink or not a folder.
function openInbox(root, fds) {
  let base = root
  for (const name of [".context", "runtime", "inbox"]) {
    const next = path.join(base, name)
    let fd
    try {
      if (name !== ".context") {
        try {
          fs.lstatSync(next) // a link, even a dangling one, is there: it is refused below
        } catch {
          fs.mkdirSync(next, { mode: 0o700 })
        }
      }
      fd = fs.openSync(next, DIR_FLAGS)
    } catch (error) {
      if (error.code === "ENOTDIR" || error.code === "ELOOP") {
        if (!warned) console.error(`sidecar: ${path.join(root, ".context")} holds a symlink or a file where a folder belongs; nothing written`)
        warned = true
        return null
      }
      throw error
    }
    fds.push(fd)
    base = VIA_FD ? `/proc/self/fd/${fd}` : next
  }
  return base
}

export const SidecarPlugin = async ({ directory }) => {
  const home = directory || process.env.PWD || process.cwd()
  const sessions = new Map() // session id -> its directory, for the end written at exit
  const busy = new Set() // sessions in a turn: opencode repeats `busy` within one
  const hostStart = startTime()
  let sequence = 0n

  const drop = (event, sessionID, extra = {}) => {
    if (typeof sessionID !== "string" || !sessionID) return
    const dir = sessions.get(sessionID) || home
    const root = findWorkspace(dir)
    if (!root || !registered(root)) return
    const fds = []
    try {
      const inbox = openInbox(root, fds)
      if (!inbox) return
      // Names sort in arrival order, like `sidecar emit`'s: nanoseconds, then pid.
      const stamp = (BigInt(Date.now()) * 1000000n + (sequence++ % 1000000n)).toString()
      const name = `${stamp.padStart(20, "0")}-${process.pid}-opencode`
      const body = { event, session_id: sessionID, host: HOST, ts: Date.now() / 1000, cwd: dir,
                     hostPid: process.pid, hostStart, ...extra }
      if (process.env.SIDECAR_HOOK_ID) body.sidecarHookId = process.env.SIDECAR_HOOK_ID
      const temp = path.join(inbox, `.${name}.tmp`)
      const fd = fs.openSync(temp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600)
      try {
        fs.writeSync(fd, JSON.stringify(body))
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(temp, path.join(inbox, `${name}.json`))
    } catch {} // a plugin must never break the agent
    finally {
      for (const fd of fds) fs.closeSync(fd)
    }
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
      }
    },
    "tool.execute.after": async (input) => {
      if (seen(input.sessionID)) drop("session-start", input.sessionID, { source: "resume" })
      drop("tool-use", input.sessionID, { tool_name: input.tool })
    },
  }
}
