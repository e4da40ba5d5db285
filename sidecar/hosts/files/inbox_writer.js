// sidecar's inbox writer, shared by the host plugins that write their events themselves: it is
// put into each of them when `sidecar integrate` installs the file (sidecar/hosts/files/plugin_file.py).
//
// Every write is synchronous (write a dotfile, rename it to *.json) and nothing here waits: a
// host may exit the moment its last handler returns (opencode), or wait for a handler with no
// timeout at all (Pi).
//
// It writes only into a workspace this machine's user initialised (`sidecar init` put it in
// their registry), never into a `.context/` that came with a clone, and never through a
// symlink: each folder from `.context` down is opened with O_NOFOLLOW and the next one is
// reached through the descriptor (/proc/self/fd), so a folder swapped for a link is refused.
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

// This process's start time (clock ticks since boot): sidecar watches the process, so a killed
// host's sessions end too; a reused pid is told apart by the start time.
function startTime() {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19])
  } catch {
    return undefined
  }
}

// Where this pid means something: this boot of this machine, and this PID namespace (as
// `sidecar emit` says it), so a daemon on another machine never looks the agent up by it.
function processSpace() {
  try {
    const boot = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
    const space = fs.readlinkSync("/proc/self/ns/pid")
    return `${boot}/${space.slice(5, -1)}`
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

// A registry that is no regular file registers nothing: a FIFO put in its place would hold the
// host's whole process on the read (hence O_NONBLOCK, and its type looked at before any read).
function registered(root) {
  let fd
  try {
    fd = fs.openSync(registryFile(), fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
    if (!fs.fstatSync(fd).isFile()) return false
    const roots = JSON.parse(fs.readFileSync(fd, "utf8")).workspaces
    return Array.isArray(roots) && roots.includes(fs.realpathSync(root))
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
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

// A writer of `host`'s events: write(dir, fields) drops one event (`fields`, with the host, the
// time, `dir` as its cwd, and this process) into the inbox of the registered workspace at or
// above `dir`, and does nothing anywhere else. It never throws: a plugin must never break the
// agent.
function inboxWriter(host) {
  const hostStart = startTime()
  const hostSpace = processSpace()
  let sequence = 0n
  return (dir, fields) => {
    const fds = []
    try {
      const root = findWorkspace(dir)
      if (!root || !registered(root)) return
      const inbox = openInbox(root, fds)
      if (!inbox) return
      // Names sort in arrival order, like `sidecar emit`'s: nanoseconds, then pid.
      const stamp = (BigInt(Date.now()) * 1000000n + (sequence++ % 1000000n)).toString()
      const name = `${stamp.padStart(20, "0")}-${process.pid}-${host}`
      const body = { host, ts: Date.now() / 1000, cwd: dir, hostPid: process.pid, hostStart,
                     hostSpace, ...fields }
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
}
