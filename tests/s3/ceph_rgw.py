#!/usr/bin/python3
"""A throwaway single-node Ceph cluster with the RADOS Gateway (Ceph's S3 server,
what Rook deploys) on loopback, for the S3 tests.

    ceph_rgw.py start DIR        cluster + radosgw in DIR; writes DIR/s3.json
    ceph_rgw.py stop DIR         stops every daemon (TERM, then KILL) and removes DIR
    ceph_rgw.py stop-rgw DIR     stops radosgw only (a store outage)
    ceph_rgw.py start-rgw DIR    starts radosgw again on the same port
    ceph_rgw.py restart-rgw DIR  both

One monitor, one OSD on memstore (RAM-backed, so nothing is written but logs),
no manager, cephx on, pools of size 1, messenger v2 on 127.0.0.1 only. Every
file (config, keyrings, monitor store, logs, pid files, admin sockets) is under
DIR; nothing reads or writes /etc/ceph or /var/lib/ceph. Ports are chosen free
on 127.0.0.1 (the OSD binds in Ceph's 6800-7300 range, as it always does).

s3.json: {"endpoint", "host_port", "region", "access_key", "secret_key",
"other_access_key", "other_secret_key", "pids": {"mon", "osd", "rgw"}}; the
second user ("other") owns nothing and exists to be denied.

Daemons run in the foreground (-f) in their own sessions with their output in
DIR/log/, so that this script knows their pids at once (DIR/pids/NAME.pid) and
so that no daemon holds the caller's stdout open (ctest waits for it to close).

Exit codes: 0 success, 1 failure (with the tails of the daemons' logs on
stderr), 2 usage, 77 the Ceph binaries are not installed (ctest's skip code).
Standard library only, plus boto3 for the final readiness check.
"""

import base64
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

EXIT_NOT_INSTALLED = 77
BINARIES = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph", "monmaptool")
# The name each daemon's /proc/PID/comm starts with: a pid file from a killed
# run may name a recycled pid, which must not be signalled.
DAEMONS = {"rgw": "radosgw", "osd": "ceph-osd", "mon": "ceph-mon"}
RGW_NAME = "client.rgw.gw"
# RGW's default zonegroup takes any SigV4 region in the credential scope (it
# recomputes the signature with the client's scope); us-east-1 is what AWS
# clients use without a region and what CreateBucket needs no
# LocationConstraint for.
REGION = "us-east-1"
START_TIMEOUT_S = float(os.environ.get("CEPH_RGW_TIMEOUT", "60"))
TERM_GRACE_S = 3.0
KILL_WAIT_S = 10.0


class FixtureError(Exception):
    pass


def log(msg):
    print("ceph_rgw: " + msg, file=sys.stderr, flush=True)


def find_binaries():
    path = os.environ.get("PATH", "") + ":/usr/bin:/usr/sbin:/usr/local/bin"
    found = {b: shutil.which(b, path=path) for b in BINARIES}
    missing = [b for b, p in found.items() if p is None]
    return found, missing


def free_port():
    # The kernel's choice; another process may take it before the daemon binds,
    # which start() reports like any other bind failure.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cephx_key():
    # A CryptoKey as Ceph encodes it: type 1 (AES), creation time, 16 secret bytes.
    now = time.time()
    secret = secrets.token_bytes(16)
    raw = struct.pack("<HIIH", 1, int(now), int((now % 1) * 1e9), len(secret)) + secret
    return base64.b64encode(raw).decode()


def random_access_key():
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(20))


def random_secret_key():
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(40))


class Cluster:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.conf = os.path.join(self.root, "ceph.conf")
        self.keyring = os.path.join(self.root, "keyring")
        self.log_dir = os.path.join(self.root, "log")
        self.pid_dir = os.path.join(self.root, "pids")
        self.state_path = os.path.join(self.root, "s3.json")
        self.bins, self.missing = find_binaries()
        self.env = dict(os.environ, CEPH_CONF=self.conf)
        self.children = {}  # name -> Popen, of the daemons this process started

    def is_ours(self):
        """True if root is absent, empty, or holds this script's files: stop and a
        fresh start remove it, and must never remove a directory given by mistake."""
        if not os.path.exists(self.root):
            return True
        if not os.path.isdir(self.root):
            return False
        entries = set(os.listdir(self.root))
        return not entries or "ceph.conf" in entries or "pids" in entries

    # -- files ---------------------------------------------------------------------------

    def write_config(self, mon_port, rgw_port):
        run_dir = os.path.join(self.root, "run")
        # A unix socket path has 107 usable bytes; a deep build directory goes
        # without admin sockets (nothing here needs them).
        asok = os.path.join(run_dir, "$name.asok")
        if len(asok.replace("$name", RGW_NAME)) > 100:
            asok = ""
        for d in ("run", "log", "pids", "mon", "osd/ceph-0", "rgw", "crash"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        conf = f"""\
[global]
fsid = {uuid.uuid4()}
mon host = v2:127.0.0.1:{mon_port}
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = {self.keyring}
run dir = {run_dir}
admin socket = {asok}
pid file =
crash dir = {self.root}/crash
log file = {self.log_dir}/$name.log
log to stderr = false
err to stderr = true
mon cluster log file = {self.log_dir}/cluster.log
mon data = {self.root}/mon/$cluster-$id
osd data = {self.root}/osd/$cluster-$id
rgw data = {self.root}/rgw/$cluster-$id
# One OSD: pools of one replica, few placement groups, no autoscaler (no manager).
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon max pg per osd = 1000
mon allow pool delete = true
mon warn on pool no redundancy = false
# Build machines with full disks: the monitor would stop below 5 % free.
mon data avail crit = 0
mon data avail warn = 0
paxos propose interval = 0.1
osd objectstore = memstore
memstore device bytes = 2147483648
osd op num shards = 2
osd op num threads per shard = 2

[{RGW_NAME}]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw thread pool size = 64
rgw enable usage log = false
rgw enable gc threads = false
rgw enable lc threads = false
rgw dynamic resharding = false
rgw run sync thread = false
rgw init timeout = {int(START_TIMEOUT_S)}
"""
        with open(self.conf, "w") as f:
            f.write(conf)

    def append_key(self, entity, key, caps=()):
        with open(self.keyring, "a") as f:
            f.write("[%s]\n\tkey = %s\n" % (entity, key))
            for kind, cap in caps:
                f.write('\tcaps %s = "%s"\n' % (kind, cap))

    def read_state(self):
        try:
            with open(self.state_path) as f:
                return json.load(f)
        except FileNotFoundError:
            raise FixtureError("%s: no s3.json (start the fixture first)" % self.root)

    def write_state(self, state):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f, indent=2)
            f.write("\n")
        os.replace(tmp, self.state_path)

    # -- processes -----------------------------------------------------------------------

    def run(self, args, timeout=30, input_path=None):
        cmd = [self.bins[args[0]]] + list(args[1:])
        try:
            p = subprocess.run(cmd, env=self.env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise FixtureError("timed out after %d s: %s" % (timeout, " ".join(cmd)))
        if p.returncode != 0:
            output = (p.stdout + p.stderr).splitlines()[-30:]
            raise FixtureError("%s exited with %d:\n%s"
                               % (" ".join(cmd), p.returncode, "\n".join(output)))
        return p.stdout

    def spawn(self, name, args):
        out = open(os.path.join(self.log_dir, name + ".out"), "ab")
        # Own session: ctest's or a shell's job-control signals do not reach the
        # daemons; stop and stop-rgw end them by pid.
        p = subprocess.Popen([self.bins[args[0]]] + list(args[1:]), env=self.env,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                             start_new_session=True, close_fds=True)
        out.close()
        with open(os.path.join(self.pid_dir, name + ".pid"), "w") as f:
            f.write("%d\n" % p.pid)
        self.children[name] = p
        return p.pid

    def pid_of(self, name):
        try:
            with open(os.path.join(self.pid_dir, name + ".pid")) as f:
                pid = int(f.read().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if process_is(pid, DAEMONS[name]) else None

    def check_alive(self):
        for name, p in self.children.items():
            if p.poll() is not None:
                raise FixtureError("%s exited with %s during start-up" % (DAEMONS[name], p.returncode))

    def stop_daemons(self, names):
        # One at a time, clients first (radosgw, then the OSD, then the
        # monitor): each stops in a fraction of a second while what it talks to
        # is still up, and hangs until the grace runs out when it is not.
        for name in names:
            pid = self.pid_of(name)
            if pid is None:
                continue
            signal_pid(pid, signal.SIGTERM)
            if wait_gone(pid, TERM_GRACE_S, self):
                signal_pid(pid, signal.SIGKILL)
                if wait_gone(pid, KILL_WAIT_S, self):
                    raise FixtureError("%s (pid %d) still running after SIGKILL" % (DAEMONS[name], pid))
        for n in names:
            try:
                os.remove(os.path.join(self.pid_dir, n + ".pid"))
            except FileNotFoundError:
                pass
            self.children.pop(n, None)

    def reap(self):
        for p in self.children.values():
            p.poll()

    # -- diagnostics ---------------------------------------------------------------------

    def log_tails(self, lines=25):
        out = []
        if not os.path.isdir(self.log_dir):
            return ""
        for name in sorted(os.listdir(self.log_dir)):
            path = os.path.join(self.log_dir, name)
            try:
                with open(path, "rb") as f:
                    f.seek(0, os.SEEK_END)
                    f.seek(max(0, f.tell() - 64 * 1024))
                    text = f.read().decode("utf-8", "replace").splitlines()[-lines:]
            except OSError:
                continue
            if text:
                out.append("---- %s (last %d lines) ----\n%s" % (path, len(text), "\n".join(text)))
        return "\n".join(out)

    # -- start ---------------------------------------------------------------------------

    def start(self):
        if self.missing:
            raise NotInstalled()
        if os.path.exists(self.root):
            # A killed earlier run (ctest timeout, ^C) leaves its daemons and files.
            if not self.is_ours():
                raise FixtureError("%s exists and is not a directory this script made" % self.root)
            log("removing a leftover %s" % self.root)
            self.stop()
        os.makedirs(self.root)
        t0 = time.monotonic()
        deadline = t0 + START_TIMEOUT_S
        try:
            state = self._start(deadline)
        except BaseException as e:
            tails = self.log_tails()
            try:
                self.stop_daemons(list(DAEMONS))
            except FixtureError as stop_error:
                log(str(stop_error))
            if isinstance(e, FixtureError):
                raise FixtureError("%s\n%s\n(logs kept in %s; `%s stop %s` removes them)"
                                   % (e, tails, self.log_dir, sys.argv[0], self.root))
            raise
        log("up in %.1f s: %s (mon %d, osd %d, rgw %d)"
            % (time.monotonic() - t0, state["endpoint"], state["pids"]["mon"],
               state["pids"]["osd"], state["pids"]["rgw"]))

    def _start(self, deadline):
        mon_port, rgw_port = free_port(), free_port()
        while rgw_port == mon_port:
            rgw_port = free_port()
        self.write_config(mon_port, rgw_port)

        # The monitor imports the keyring at mkfs: its own key, the admin's and
        # radosgw's (with their capabilities). The OSD's key is registered by
        # `osd new` below and only then added to the file.
        self.append_key("mon.", cephx_key(), [("mon", "allow *")])
        self.append_key("client.admin", cephx_key(),
                        [("mon", "allow *"), ("osd", "allow *"), ("mgr", "allow *")])
        self.append_key(RGW_NAME, cephx_key(), [("mon", "allow rw"), ("osd", "allow rwx")])
        monmap = os.path.join(self.root, "monmap")
        fsid = self._conf_value("fsid")
        self.run(["monmaptool", "--create", "--fsid", fsid,
                  "--addv", "a", "[v2:127.0.0.1:%d]" % mon_port, monmap])
        self.run(["ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", self.keyring])
        pids = {"mon": self.spawn("mon", ["ceph-mon", "-f", "-i", "a"])}

        # ceph-osd --mkfs asks the monitor for the OSD map, so the OSD must exist
        # there, with its key, first.
        osd_uuid, osd_key = str(uuid.uuid4()), cephx_key()
        secret = os.path.join(self.root, "osd-secret.json")
        with open(secret, "w") as f:
            json.dump({"cephx_secret": osd_key}, f)
        self.run(["ceph", "--connect-timeout", str(max(5, int(deadline - time.monotonic()))),
                  "osd", "new", osd_uuid, "0", "-i", secret],
                 timeout=max(5, deadline - time.monotonic()))
        os.remove(secret)
        self.check_alive()
        self.append_key("osd.0", osd_key)
        self.run(["ceph-osd", "--mkfs", "-i", "0", "--osd-uuid", osd_uuid],
                 timeout=max(5, deadline - time.monotonic()))
        pids["osd"] = self.spawn("osd", ["ceph-osd", "-f", "-i", "0"])

        # radosgw creates its realm, zone and pools itself and waits for the
        # OSD; it answers HTTP once they exist.
        pids["rgw"] = self.spawn("rgw", ["radosgw", "-f", "-n", RGW_NAME])
        endpoint = "http://127.0.0.1:%d" % rgw_port
        self.wait_http(endpoint, deadline)

        state = {
            "endpoint": endpoint,
            "host_port": "127.0.0.1:%d" % rgw_port,
            "region": REGION,
            "access_key": random_access_key(),
            "secret_key": random_secret_key(),
            "other_access_key": random_access_key(),
            "other_secret_key": random_secret_key(),
            "pids": pids,
        }
        users = [("inferd-test", state["access_key"], state["secret_key"]),
                 ("inferd-other", state["other_access_key"], state["other_secret_key"])]
        for uid, ak, sk in users:
            self.run(["radosgw-admin", "user", "create", "--uid", uid, "--display-name", uid,
                      "--access-key", ak, "--secret-key", sk],
                     timeout=max(5, deadline - time.monotonic()))
        self.wait_s3(state, deadline)
        self.write_state(state)
        return state

    def _conf_value(self, key):
        with open(self.conf) as f:
            for line in f:
                k, _, v = line.partition("=")
                if k.strip() == key:
                    return v.strip()
        raise FixtureError("no %s in %s" % (key, self.conf))

    def wait_http(self, endpoint, deadline):
        # Any HTTP answer (an anonymous ListBuckets is 200) means the frontend
        # is serving; a refused connection means not yet.
        while True:
            self.check_alive()
            try:
                with urllib.request.urlopen(endpoint + "/", timeout=2):
                    return
            except urllib.error.HTTPError:
                return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise FixtureError("radosgw did not answer on %s within %.0f s"
                                   % (endpoint, START_TIMEOUT_S))
            time.sleep(0.2)

    def wait_s3(self, state, deadline):
        import boto3
        import botocore.config
        client = boto3.client(
            "s3", endpoint_url=state["endpoint"], region_name=state["region"],
            aws_access_key_id=state["access_key"], aws_secret_access_key=state["secret_key"],
            config=botocore.config.Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1},
                                          connect_timeout=2, read_timeout=5))
        while True:
            self.check_alive()
            try:
                client.list_buckets()
                return
            except Exception as e:  # noqa: BLE001 - any failure means "not yet"
                last = e
            if time.monotonic() > deadline:
                raise FixtureError("signed ListBuckets did not succeed within %.0f s: %s"
                                   % (START_TIMEOUT_S, last))
            time.sleep(0.2)

    # -- stop, radosgw alone -------------------------------------------------------------

    def stop(self):
        if not self.is_ours():
            raise FixtureError("%s is not a directory this script made; not removing it" % self.root)
        if os.path.isdir(self.pid_dir):
            self.stop_daemons(list(DAEMONS))
        if os.path.exists(self.root):
            shutil.rmtree(self.root)

    def stop_rgw(self):
        state = self.read_state()
        self.stop_daemons(["rgw"])
        state["pids"]["rgw"] = None
        self.write_state(state)

    def start_rgw(self):
        state = self.read_state()
        if self.pid_of("rgw") is not None:
            raise FixtureError("radosgw is already running (pid %d)" % self.pid_of("rgw"))
        deadline = time.monotonic() + START_TIMEOUT_S
        state["pids"]["rgw"] = self.spawn("rgw", ["radosgw", "-f", "-n", RGW_NAME])
        try:
            self.wait_http(state["endpoint"], deadline)
            self.wait_s3(state, deadline)
        except FixtureError as e:
            tails = self.log_tails()
            self.stop_daemons(["rgw"])
            raise FixtureError("%s\n%s" % (e, tails))
        self.write_state(state)


class NotInstalled(Exception):
    pass


def process_is(pid, comm=None):
    """True if pid is alive (not a zombie) and, given comm, runs that program."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # "pid (comm) state ...": comm may hold spaces and parentheses.
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    state = stat[stat.rindex(")") + 2:][:1]
    # comm is cut to 15 bytes in /proc.
    return state not in ("Z", "X") and (comm is None or comm[:15] == name)


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_gone(pid, seconds, cluster):
    """Waits for pid to end; True if it is still running after seconds.

    A daemon that this process started stays a zombie until reaped (reap());
    one that an earlier `start` left is reparented, and a zombie counts as gone.
    """
    deadline = time.monotonic() + seconds
    while True:
        cluster.reap()
        if not process_is(pid):
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.02)


def main(argv):
    commands = ("start", "stop", "stop-rgw", "start-rgw", "restart-rgw")
    if len(argv) != 3 or argv[1] not in commands:
        print("usage: %s {%s} DIR" % (argv[0], "|".join(commands)), file=sys.stderr)
        return 2
    cluster = Cluster(argv[2])
    # ctest's timeout and ^C: end the same way as a failure (daemons stopped).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        if argv[1] == "start":
            cluster.start()
        elif argv[1] == "stop":
            cluster.stop()
        elif argv[1] == "stop-rgw":
            cluster.stop_rgw()
        elif argv[1] == "start-rgw":
            cluster.start_rgw()
        else:
            cluster.stop_rgw()
            cluster.start_rgw()
    except NotInstalled:
        log("ceph-mon/ceph-osd/radosgw not installed (missing: %s); "
            "scripts/install-deps.sh installs them" % ", ".join(cluster.missing))
        return EXIT_NOT_INSTALLED
    except FixtureError as e:
        log("%s failed: %s" % (argv[1], e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
