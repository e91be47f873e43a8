// Package gitops runs the server side's git work — per-repository bare mirrors,
// per-job workspaces, bot commits and guarded pushes — through the git CLI,
// keeping installation tokens out of URLs, argv, logs and checkouts.
//
// # Layout
//
// Under Options.Dir (normally <data dir>/git):
//
//	mirrors/<owner>/<name>.git      bare mirror (git clone --mirror), one per repository
//	workspaces/<id>/src             the job's checkout: plain files, no .git inside
//	workspaces/<id>/git             the job's own repository (git dir) for that checkout
//
// Owner and name are lower-cased (GitHub names are case-insensitive) and checked
// so that no name can leave Dir. A mirror is cloned on first use (into a
// temporary directory, then renamed into place so a crash never leaves half a
// mirror) and refreshed with git fetch --prune afterwards. Operations on one
// mirror are serialised by a per-repository lock that honours context
// cancellation; different repositories proceed in parallel.
//
// # Why a separate clone and not git worktree
//
// A job never clones from the network: the repository's persistent mirror is
// fetched, then the workspace is a local git clone --mirror of it into
// its own git dir — the mirror's object files hard-linked, not copied, so it
// costs a directory of links whatever the repository's size — reconfigured as
// an ordinary non-bare repository whose origin is the real remote URL, and
// checked out on a new local branch with --git-dir/--work-tree. It does what
// git worktree add would (no second copy of the history), without its
// drawbacks:
//
//   - a worktree shares refs with the mirror, and the mirror's fetch --prune
//     (refspec +refs/*:refs/*) would delete or overwrite the job's branch, and
//     one branch cannot be checked out in two worktrees at once (two jobs on
//     the same PR branch, or a retry while an old workspace is still on disk);
//   - a hard link is the object file itself, not a pointer to the mirror's
//     copy: when a fetch, repack or gc in the mirror drops an object (a
//     force-pushed branch), the job's link keeps it, which alternates
//     (--shared, --reference without --dissociate) would not. Git never
//     writes an object file in place, and only server-side git ever opens
//     the workspace's git dir (the sandbox gets a copy of the checkout,
//     never a mount), so nothing a job does can alter the mirror's objects;
//   - the git dir lives beside the checkout, not inside it, so the checkout the
//     model edits and the sandbox mounts contains no git metadata at all: a
//     verify command cannot plant hooks, core.fsmonitor or filter drivers in
//     the config that server-side git (which holds a live token) reads later.
//
// Remove deletes both directories; there is no worktree metadata to prune.
//
// # Credentials
//
// Tokens come from a TokenSource per operation (installation tokens expire
// after an hour). For each git child that talks to the remote, a credential
// helper script is written to a fresh private temporary directory (0700,
// outside every checkout); the script contains no secret and prints the token
// from an environment variable set only on that one child process. Every
// command runs with -c credential.helper= (dropping any other helper before
// ours, so no store or cache helper ever records the token),
// GIT_TERMINAL_PROMPT=0, the system and global git configuration ignored, and
// hooks disabled. Remote URLs with user info are refused, and credentials are
// never sent over plain http except to a loopback address (tests).
//
// # Nothing of a repository runs
//
// git reads no system, global or environment configuration, so the only
// configuration it has is what selfcode wrote: no filter, diff, textconv or
// merge driver that a repository's .gitattributes names is defined, and
// hooks, fsmonitor and submodule recursion are switched off on every call
// (see hardening). Local applies the same to `selfcode run`'s checkout.
//
// # No credential is pushed
//
// Before every push the commits it publishes (the workspace's base to HEAD,
// each commit's patch) are scanned with gitleaks' rules (app/secretscan); a
// push that adds credential-looking text is refused with a *SecretsError
// naming file, line and rule, never the value.
package gitops
