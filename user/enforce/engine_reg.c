/* Registered sandboxes: cgroups a container runtime's hook (egretctl oci-hook) names as
 * sandboxes, wherever the runtime put them, with what it knows of the container. A
 * registration is checked (a cgroup v2 directory below the attach point, not one holding egretd
 * or a watched subtree), its rules go into the trie under the cgroup's id, the kernel learns of
 * it in `sandboxes`, and its words are pinned in `sandbox_meta` so that a restarted egretd knows
 * its containers. It ends with the runtime's poststop hook or the cgroup's removal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "cgroup.h"
#include "egret/ocsf.h"
#include "egret/policy.h"
#include "engine.h"
#include "engine_int.h"
#include "loader.h"
#include "log.h"
#include "policy_map.h"
#include "taskseed.h"
#include "util.h"

void sandbox_pb__fill(struct sandbox_pb *out, uint64_t id, const char *name,
		      const struct sandbox_meta *m)
{
	const char *last, *colon;

	out->sb = (Egret__V1__Sandbox)EGRET__V1__SANDBOX__INIT;
	out->sb.cgroup_id = id;
	out->sb.name = (char *)(name ? name : "");
	if (!m || (!m->container_id && !m->container_name && !m->image && !m->pod_name))
		return;
	out->c = (Egret__V1__Container)EGRET__V1__CONTAINER__INIT;
	out->img = (Egret__V1__ContainerImage)EGRET__V1__CONTAINER_IMAGE__INIT;
	out->c.uid = (char *)(m->container_id ? m->container_id : "");
	out->c.name = (char *)(m->container_name  ? m->container_name
			       : m->k8s_container ? m->k8s_container
						  : "");
	out->c.runtime = (char *)(m->runtime ? m->runtime : "");
	out->c.orchestrator = (char *)(m->pod_name || m->pod_uid ? "kubernetes" : "");
	out->c.pod_uuid = (char *)(m->pod_uid ? m->pod_uid : "");
	out->c.pod_name = (char *)(m->pod_name ? m->pod_name : "");
	out->c.namespace_ = (char *)(m->pod_namespace ? m->pod_namespace : "");
	for (unsigned int i = 0; i < m->nlabels; i++)
		out->labels[i] = (char *)m->labels[i];
	out->c.n_labels = m->nlabels;
	out->c.labels = out->labels;
	out->tag[0] = '\0';
	if (m->image) {
		/* the tag: after the last ':' of the last component, unless a digest names it */
		last = strrchr(m->image, '/');
		colon = strrchr(last ? last : m->image, ':');
		if (colon && !strchr(m->image, '@'))
			snprintf(out->tag, sizeof(out->tag), "%s", colon + 1);
		out->img.name = (char *)m->image;
		out->img.tag = out->tag;
		out->c.image = &out->img;
	}
	out->sb.container = &out->c;
}

static void emit_lifecycle(struct engine *e, const struct sandbox_entry *s, int kind,
			   const char *reason)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__SandboxLifecycle sl = EGRET__V1__SANDBOX_LIFECYCLE__INIT;
	struct sandbox_pb pb;

	if (!e->stream)
		return;
	sandbox_pb__fill(&pb, s->id, s->name, s->meta);
	sl.kind = kind;
	sl.reason = (char *)reason;
	ev.sandbox = &pb.sb;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = kind == EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_REGISTERED
				 ? OCSF_APP_ACTIVITY_START
				 : OCSF_APP_ACTIVITY_STOP;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE;
	ev.sandbox_lifecycle = &sl;
	stream__emit(e->stream, &ev);
}

/* The v2 path (in egretd's view) and id of the cgroup directory cgfd. */
static int cgroup_of_fd(const struct engine *e, int cgfd, char *path, size_t size, uint64_t *id,
			char *err, size_t errsz)
{
	char link[64];
	struct statfs sfs;
	struct stat st;
	ssize_t n;

	if (fstatfs(cgfd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC_ || fstat(cgfd, &st) ||
	    !S_ISDIR(st.st_mode)) {
		snprintf(err, errsz, "the descriptor given is not a cgroup v2 directory");
		return -EINVAL;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", cgfd);
	n = readlink(link, path, size - 1);
	if (n <= 0 || (size_t)n >= size - 1) {
		snprintf(err, errsz, "cannot name the cgroup given: %s", strerror(errno));
		return -EINVAL;
	}
	path[n] = '\0';
	if (!cgroup__is_within(path, e->paths->cgroup_mount)) {
		snprintf(err, errsz, "cgroup %s is not under egretd's cgroup v2 mount %s", path,
			 e->paths->cgroup_mount);
		return -EXDEV;
	}
	*id = st.st_ino;
	return 0;
}

/* May the cgroup at path be a sandbox (or exempt)? Below the attach point (else no program runs
 * there), not too deep, neither egret's root or a watched subtree nor any cgroup above one of
 * them (that would make the host, or every sandbox, one sandbox or none), and a sandbox not one
 * holding egretd.
 */
static int check_place(const struct engine *e, const char *path, bool exempt, char *err,
		       size_t errsz)
{
	const struct egret_paths *p = e->paths;
	char own[PATH_MAX];
	unsigned int level = 0;

	cgroup__level(p->cgroup_mount, path, &level);
	if (!cgroup__is_within(path, paths__attach_path(p)) || level == 0) {
		snprintf(err, errsz, "cgroup %s is not below %s, where egret's programs attach",
			 path, paths__attach_path(p));
		return -EXDEV;
	}
	if (level >= EGRET_CGROUP_DEPTH) {
		snprintf(err, errsz,
			 "cgroup %s is %u levels deep; egret finds sandboxes at most %d", path,
			 level, EGRET_CGROUP_DEPTH - 1);
		return -EINVAL;
	}
	if (!exempt && cgroup__of_pid(0, p->cgroup_mount, own, sizeof(own)) == 0 &&
	    cgroup__is_within(own, path)) {
		snprintf(err, errsz, "cgroup %s holds egretd itself", path);
		return -EPERM;
	}
	for (unsigned int i = 0; i < (p->nwatch ? p->nwatch : 1); i++) {
		const char *w = p->nwatch ? p->watch[i].path : p->cgroup_root;

		if (cgroup__is_within(w, path)) {
			snprintf(err, errsz,
				 "cgroup %s holds %s %s: a sandbox is one cgroup below it", path,
				 i ? "the watched subtree" : "egret's root", w);
			return -EPERM;
		}
	}
	return 0;
}

static int pin_meta(struct engine *e, uint64_t id, const struct sandbox_meta *m)
{
	struct egret_sandbox_meta *v = calloc(1, sizeof(*v));
	int ret = 0;

	if (!v)
		return -ENOMEM;
	v->len = (__u32)m->len;
	memcpy(v->words, m->words, m->len);
	if (bpf_map_update_elem(e->meta_fd, &id, v, BPF_ANY))
		ret = -errno;
	free(v);
	return ret;
}

/* How many entries `sandboxes` holds (a full table is E2BIG to every update). */
static unsigned int kernel_sandboxes(const struct engine *e)
{
	uint64_t key, next;
	unsigned int n = 0;
	bool have = false;

	while (n < 2 * EGRET_SANDBOXES_MAX &&
	       bpf_map_get_next_key(e->sandboxes_fd, have ? &key : NULL, &next) == 0) {
		key = next;
		have = true;
		n++;
	}
	return n;
}

/* Why a registration failed, naming the table that is full. */
static void register_error(const struct engine *e, int ret, char *err, size_t errsz)
{
	if (ret == -E2BIG)
		snprintf(err, errsz,
			 "cannot register: the kernel's table of sandboxes is full (%u of %u "
			 "entries: registered containers, exempt cgroups, children of %s); remove "
			 "sandboxes or unregister containers first",
			 kernel_sandboxes(e), EGRET_SANDBOXES_MAX, e->cgroup_root);
	else
		snprintf(err, errsz, "cannot register: %s", strerror(-ret));
}

/* An exempt cgroup: the kernel takes it for the host's, whatever holds it. */
static int install_exempt(struct engine *e, uint64_t id, struct sandbox_meta *m, const char *name,
			  char *err, size_t errsz)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);
	int ret;

	if (s && (s->flags & ENGINE_SB_INSTALLED)) {
		snprintf(err, errsz, "cgroup %llu is a sandbox: unregister it first",
			 (unsigned long long)id);
		return -EEXIST;
	}
	sandbox_names__set(&e->reg, id, name);
	s = sandbox_names__entry(&e->reg, id);
	if (!s)
		return -ENOMEM;
	if (s->meta) {
		sandbox_meta__free(s->meta);
		free(s->meta);
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->meta = m;
	s->flags |= ENGINE_SB_EXEMPT;
	ret = engine__register_id(e, id, false);
	if (!ret)
		ret = pin_meta(e, id, m);
	if (ret) {
		register_error(e, ret, err, errsz);
		bpf_map_delete_elem(e->sandboxes_fd, &id);
		s->meta = NULL;
		sandbox_names__del(&e->reg, id);
	}
	return ret;
}

void engine__exempt_gone(struct engine *e, uint64_t id)
{
	bpf_map_delete_elem(e->sandboxes_fd, &id);
	bpf_map_delete_elem(e->meta_fd, &id);
	sandbox_names__del(&e->reg, id);
}

static const char *name_for(const struct sandbox_meta *m, uint64_t id, char *buf, size_t size)
{
	if (m->name)
		return m->name;
	if (m->container_name && sandbox__valid_registered_name(m->container_name))
		return m->container_name;
	if (m->container_id && sandbox__valid_registered_name(m->container_id))
		return m->container_id;
	snprintf(buf, size, "cgroup-%llu", (unsigned long long)id);
	return buf;
}

/* The entry of id (new, or one being registered again) takes name and meta; its rules go into
 * the trie and the kernel flags it. On failure what it had before is put back.
 */
static int install(struct engine *e, uint64_t id, const char *name, struct sandbox_meta *m,
		   char *err, size_t errsz)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id), old = { .id = id };
	bool was = s && (s->flags & ENGINE_SB_INSTALLED);
	int ret;

	if (s)
		old = *s;
	if (was)
		policy_map__remove(e->trie_fd, &e->pol, old.name, old.meta, id);
	sandbox_names__set(&e->reg, id, name);
	s = sandbox_names__entry(&e->reg, id);
	if (!s)
		return -ENOMEM;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->meta = m;
	ret = policy_map__install(e->trie_fd, &e->pol, s->name, m, id, err, errsz);
	if (!ret)
		ret = engine__register_id(e, id, engine__has_rules(&e->pol, s));
	if (!ret)
		ret = pin_meta(e, id, m);
	if (!ret) {
		engine__mark_installed(e, id, true);
		engine__budget_one(e, s); /* a registration again, maybe of new metadata */
		engine__limits_one(e, s);
		if (old.meta) {
			sandbox_meta__free(old.meta);
			free(old.meta);
		}
		return 0;
	}
	policy_map__remove(e->trie_fd, &e->pol, s->name, m, id);
	snprintf(s->name, sizeof(s->name), "%s", old.name);
	s->meta = old.meta;
	if (was)
		policy_map__install(e->trie_fd, &e->pol, s->name, s->meta, id, err, errsz);
	else
		bpf_map_delete_elem(e->sandboxes_fd, &id);
	if (err[0] == '\0')
		register_error(e, ret, err, errsz);
	return ret;
}

/* task_sandbox, as egretd's loader pinned it; -errno until it is (a registration at start,
 * before the programs are attached, is seeded by taskseed__run after them)
 */
static int task_map(const struct engine *e)
{
	static int fd = -ENOENT;
	char pin[PATH_MAX];
	int err;

	if (fd >= 0)
		return fd;
	err = paths__state(e->paths, pin, sizeof(pin), "maps", LOADER_MAP_NAME(task_sandbox));
	if (err)
		return err;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		fd = -errno;
	return fd;
}

/* The processes already in a cgroup just registered (its runtime moved the container's init
 * there first; a unit or a VM registered by hand) are its sandbox's from now on: without a
 * record, one moving itself out would be judged by where it went.
 */
static void seed_registered(struct engine *e, const char *path, uint64_t id, bool exempt)
{
	struct taskseed t = { task_map(e), e->sandboxes_fd, e->paths };
	int n;

	if (t.task_fd < 0)
		return;
	n = taskseed__registered(&t, path, exempt ? EGRET_NO_SANDBOX : id);
	if (n < 0)
		log_warn("cannot record the processes already in %s as its sandbox's: %s", path,
			 strerror(-n));
}

int engine__register(struct engine *e, int cgfd, const char *words, size_t len, uint64_t *id,
		     char *err, size_t errsz)
{
	char path[PATH_MAX], buf[32];
	struct sandbox_meta *m = calloc(1, sizeof(*m));
	const struct sandbox_entry *s;
	int ret;

	err[0] = '\0';
	if (!m)
		return -ENOMEM;
	ret = sandbox_meta__parse(m, words, len, err, errsz);
	if (!ret)
		ret = cgroup_of_fd(e, cgfd, path, sizeof(path), id, err, errsz);
	if (!ret)
		ret = check_place(e, path, m->exempt, err, errsz);
	if (!ret && m->exempt) {
		ret = install_exempt(e, *id, m, name_for(m, *id, buf, sizeof(buf)), err, errsz);
		if (!ret) {
			log_info("cgroup %s (id %llu) exempt: the host's", path,
				 (unsigned long long)*id);
			seed_registered(e, path, *id, true);
			return 0;
		}
	} else if (!ret) {
		ret = install(e, *id, name_for(m, *id, buf, sizeof(buf)), m, err, errsz);
	}
	if (ret) {
		sandbox_meta__free(m);
		free(m);
		return ret;
	}
	seed_registered(e, path, *id, false);
	s = engine__sandbox(e, *id);
	log_info("sandbox %s (cgroup %s, id %llu) registered%s%s", s->name, path,
		 (unsigned long long)*id, m->image ? ", image " : "", m->image ? m->image : "");
	emit_lifecycle(e, s, EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_REGISTERED, path);
	return 0;
}

/* The value of task_sandbox (bpf/lib/maps.bpf.h struct task_sandbox). */
struct task_record {
	__u64 sandbox_id;
	__u32 doomed;
	__u32 flags; /* TASK_FOREIGN 1: pulled in from outside */
};

struct own_scan {
	int task_fd;
	bool found;
};

/* A process of the host's own, placed there by the host: none of a sandbox's may live there
 * (a sandbox's process that enters is killed, one it pulls in is foreign).
 */
static void own_process(void *ctx, int pid, __u64 sandbox_id)
{
	struct own_scan *o = ctx;
	struct task_record v;
	int fd;

	(void)sandbox_id;
	if (o->found || (fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return;
	if (bpf_map_lookup_elem(o->task_fd, &fd, &v) || (!(v.flags & 1u) && !v.doomed))
		o->found = true;
	close(fd);
}

/* Whether the host put a process of its own in the cgroup at path (or below it). */
static bool holds_own_process(const struct engine *e, const char *path)
{
	struct own_scan o = { task_map(e), false };
	char events[PATH_MAX + 16], buf[256];

	/* most of what a sandbox makes holds nothing at all: one read says so */
	snprintf(events, sizeof(events), "%s/cgroup.events", path);
	if (read_file(events, buf, sizeof(buf)) > 0 &&
	    (!strncmp(buf, "populated 0", 11) || strstr(buf, "\npopulated 0")))
		return false;
	if (o.task_fd < 0)
		return true; /* cannot tell: as before egret knew who made what */
	taskseed__each(path, own_process, &o);
	return o.found;
}

bool engine__claims(struct engine *e, const struct policy *p, struct sandbox_entry *s,
		    bool made_now)
{
	struct egret_sandbox v;
	char path[PATH_MAX];

	if (s->meta)
		return true; /* a registration */
	if (s->flags & ENGINE_SB_UNCLAIMED)
		return false;
	if (bpf_map_lookup_elem(e->sandboxes_fd, &s->id, &v) == 0 || engine__has_rules(p, s) ||
	    (!made_now && join_path(path, sizeof(path), e->cgroup_root, s->name) == 0 &&
	     holds_own_process(e, path)))
		return true;
	s->flags |= ENGINE_SB_UNCLAIMED;
	log_debug("cgroup %s/%s (id %llu) was not made by the host: not registered (no network)",
		  e->cgroup_root, s->name, (unsigned long long)s->id);
	return false;
}

void engine__sandbox_seen(struct engine *e, uint64_t id, const char *name, bool made_now)
{
	struct sandbox_entry *s;

	if (engine__installed_name(e, id))
		return;
	sandbox_names__set(&e->reg, id, name);
	s = sandbox_names__entry(&e->reg, id);
	if (s && engine__claims(e, &e->pol, s, made_now))
		engine__sandbox_created(e, id, name);
}

int engine__unregister(struct engine *e, uint64_t id, const char *why)
{
	const struct sandbox_entry *s = engine__sandbox(e, id);

	if (!s || !s->meta)
		return -ENOENT;
	emit_lifecycle(e, s, EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_UNREGISTERED, why);
	engine__sandbox_destroyed(e, id);
	return 0;
}

int engine__sandbox_path(const struct engine *e, uint64_t id, char *out, size_t size)
{
	const struct sandbox_entry *s = engine__sandbox(e, id);

	if (!s)
		return -ENOENT;
	if (!s->meta)
		return join_path(out, size, e->cgroup_root, s->name);
	if (!s->meta->cgroup)
		return -ENOENT;
	return paths__cgroup_arg(e->paths, s->meta->cgroup, out, size);
}

bool engine__sandbox_exists(const struct engine *e, const struct sandbox_entry *s)
{
	char path[PATH_MAX];
	uint64_t id;

	if (!s->meta)
		return engine__sandbox_dir_id(e, s->name, &id) && id == s->id;
	if (!s->meta->cgroup || paths__cgroup_arg(e->paths, s->meta->cgroup, path, sizeof(path)) ||
	    cgroup__id(path, &id))
		return false;
	return id == s->id;
}

/* One pinned registration: back into the registry when its cgroup is still the same. */
static bool load_one(struct engine *e, uint64_t id, const struct egret_sandbox_meta *v)
{
	struct sandbox_meta *m = calloc(1, sizeof(*m));
	char err[256], buf[32];
	struct sandbox_entry *s;

	if (!m || v->len > sizeof(v->words) ||
	    sandbox_meta__parse(m, (const char *)v->words, v->len, err, sizeof(err))) {
		free(m);
		return false;
	}
	sandbox_names__set(&e->reg, id, name_for(m, id, buf, sizeof(buf)));
	s = sandbox_names__entry(&e->reg, id);
	if (!s) {
		sandbox_meta__free(m);
		free(m);
		return false;
	}
	snprintf(s->name, sizeof(s->name), "%s", name_for(m, id, buf, sizeof(buf)));
	s->meta = m;
	if (m->exempt)
		s->flags |= ENGINE_SB_EXEMPT;
	if (!engine__sandbox_exists(e, s)) {
		sandbox_names__del(&e->reg, id);
		return false;
	}
	return true;
}

void engine__load_registrations(struct engine *e)
{
	struct egret_sandbox_meta *v = malloc(sizeof(*v));
	uint64_t key = 0, next;
	bool have = false;
	unsigned int kept = 0, gone = 0;

	if (!v)
		return;
	while (bpf_map_get_next_key(e->meta_fd, have ? &key : NULL, &next) == 0) {
		if (bpf_map_lookup_elem(e->meta_fd, &next, v) == 0 && load_one(e, next, v)) {
			kept++;
			key = next;
			have = true;
			continue;
		}
		bpf_map_delete_elem(e->meta_fd, &next);
		bpf_map_delete_elem(e->sandboxes_fd, &next);
		gone++;
	}
	free(v);
	if (kept || gone)
		log_info("registered sandboxes: %u kept from the previous egretd, %u gone since",
			 kept, gone);
}

void engine__exempt_self(struct engine *e)
{
	char own[PATH_MAX], words[PATH_MAX + 64], err[256];
	const char *rel;
	uint64_t id;
	int fd, n;

	if (cgroup__of_pid(0, e->paths->cgroup_mount, own, sizeof(own)) ||
	    !engine__cgroup_in_sandbox(e, own))
		return;
	rel = own + strlen(e->paths->cgroup_mount);
	n = snprintf(words, sizeof(words), "exempt=1%ccgroup=%s%cname=egretd", '\0',
		     rel[0] ? rel : "/", '\0');
	fd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || n < 0 || (size_t)n >= sizeof(words) ||
	    engine__register(e, fd, words, (size_t)n + 1, &id, err, sizeof(err)))
		log_err("egretd's own cgroup %s is in a sandbox and could not be exempted (%s): "
			"egretd has no network there",
			own, fd < 0 ? strerror(errno) : err);
	if (fd >= 0)
		close(fd);
}

/* The registration the kernel finds for a cgroup and its ancestors, as sandbox_pick() does:
 * 1 in a sandbox, 0 exempt, -1 in none.
 */
static int registered_place(const struct engine *e, const char *path)
{
	char p[PATH_MAX];
	size_t mlen = strlen(e->paths->cgroup_mount);
	uint64_t id;

	snprintf(p, sizeof(p), "%s", path);
	while (strlen(p) > mlen) {
		const struct sandbox_entry *s;
		char *slash;

		if (cgroup__id(p, &id) == 0 && (s = sandbox_names__entry(&e->reg, id))) {
			if (s->flags & ENGINE_SB_EXEMPT)
				return 0;
			if (s->flags & ENGINE_SB_INSTALLED)
				return 1;
		}
		slash = strrchr(p, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return -1;
}

bool engine__cgroup_in_sandbox(const struct engine *e, const char *path)
{
	const struct egret_paths *p = e->paths;
	int reg = registered_place(e, path);

	if (reg >= 0)
		return reg == 1;
	for (unsigned int i = 0; i < (p->nwatch ? p->nwatch : 1); i++) {
		if (cgroup__is_within(path, p->nwatch ? p->watch[i].path : p->cgroup_root))
			return true;
	}
	return false;
}
