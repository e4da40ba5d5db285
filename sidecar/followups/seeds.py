"""What sidecar gives a workspace: the seeded hooks and their prompts.

`post-task` (on) resumes a finished session once to tidy up; `resume-after-limit` (off until
`sidecar hooks enable resume-after-limit`) carries on a session whose turn a usage limit
refused, once the limit resets. hooks.json remembers which hooks were seeded (`seeded`), so a
hook the user removed is not given back, and a file from an earlier version gets each new one
once.
"""

from __future__ import annotations

from sidecar.followups.model import Hook, HooksDoc, new_hook
from sidecar.vocabulary import EventKind

DEFAULT_PROMPT = """---
description: runs once, shortly after an agent's session ends, in that same conversation
---
The task in this conversation has ended. Before you finish for good, please:

1. Save anything worth remembering about this task for next time.
2. Update any documentation the change made out of date.
3. Remove temporary files or debugging code you left behind.

Keep it short, and do not start new work. Reply DONE when you are finished.
"""

LIMIT_PROMPT = """---
description: resumes a conversation whose turn failed on a usage limit, once the limit resets
---
The usage limit that stopped you has reset. Continue where you left off: finish the task
you were working on, without starting anything new.
"""

LIMIT_HOOK = "resume-after-limit"
SEEDED = "seeded"  # hooks.json's list of the hooks sidecar gave it: one removed stays removed


def limit_hook(created: float) -> Hook:
    """Resumes a session whose turn failed on a usage limit, once the limit resets. Off until
    `sidecar hooks enable resume-after-limit`: it spends the user's quota unasked otherwise."""
    return new_hook(LIMIT_HOOK, LIMIT_HOOK, created, event=EventKind.TURN_FAILED.value,
                    delaySeconds=0, promptFile=f"hooks/{LIMIT_HOOK}.md", enabled=False)


def default_doc(created: float) -> HooksDoc:
    return HooksDoc(hooks={"post-task": new_hook("post-task", "post-task", created),
                           LIMIT_HOOK: limit_hook(created)},
                    extra={SEEDED: ["post-task", LIMIT_HOOK]})


def needs_seeding(doc: HooksDoc) -> bool:
    seeded = doc.extra.get(SEEDED)
    return not isinstance(seeded, list) or LIMIT_HOOK not in seeded


def seed_missing(doc: HooksDoc, created: float) -> None:
    """Give a hooks.json from an earlier version the hooks seeded since, each once."""
    seeded = doc.extra.get(SEEDED)
    if not isinstance(seeded, list):
        seeded = ["post-task"]
    if LIMIT_HOOK not in seeded:
        doc.hooks.setdefault(LIMIT_HOOK, limit_hook(created))
        seeded.append(LIMIT_HOOK)
    doc.extra[SEEDED] = seeded


PROMPTS = {"post-task.md": DEFAULT_PROMPT, f"{LIMIT_HOOK}.md": LIMIT_PROMPT}
