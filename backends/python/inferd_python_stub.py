"""inferd's Python stub: runs one instance of a Triton Python model (model.py) for inferd.

Started by libinferd_python.so as ``/usr/bin/python3 inferd_python_stub.py <fd> <parent pid>
<mode>`` with fd = one end of a SOCK_SEQPACKET socketpair.  Each datagram is one JSON control
message; tensors never travel in it: they live in shared memory regions (memfd) whose file
descriptors ride along (SCM_RIGHTS) the first time a region is used.

Regions: "E" (inferd writes the inputs of one execute; valid until execute returns), "B"
(inferd writes BLS results; a 64-byte header's first word is 1 while lent to the stub, the stub
writes 0 when the last numpy view of it dies) and "S" (the stub's own: outputs and BLS inputs;
same header, inferd writes 0 once it has copied the data).

Threads: the main thread runs initialize/execute/finalize.  Whoever waits for a message (the
idle main thread, or a thread blocked in BLS) reads the socket; the others wait on a condition,
so an execute reaches model code without a thread switch.  A watchdog exits when inferd does.
Modes: "instance" (serve a model instance) and "autocomplete" (run auto_complete_config once).
"""

import array
import asyncio
import collections
import ctypes
import importlib.util
import inspect
import itertools
import json
import mmap
import os
import socket
import struct
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import triton_python_backend_utils as pb  # noqa: E402

HEADER = 64  # bytes at the start of every region (word 0: 1 = lent to the peer)
MIN_REGION = 1 << 16
# Control messages above this size travel in a memfd (a datagram must fit the socket buffer).
BIG_MESSAGE = 1 << 16
# Triton error code -> inferd (gRPC) code, and back.
TO_INFERD = {0: 2, 1: 13, 2: 5, 3: 3, 4: 14, 5: 12, 6: 6, 7: 1}
FROM_INFERD = {1: 7, 2: 0, 3: 3, 5: 2, 6: 6, 12: 5, 13: 1, 14: 4}
ITEMSIZE = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 14: 2}
DTYPES = {k: np.dtype(v) for k, v in pb._TO_NUMPY.items() if k != 13}
DTYPES[14] = np.dtype(np.uint16)  # BF16: raw 16-bit words (as_numpy refuses it)


def _addr(mm):
    return ctypes.addressof(ctypes.c_char.from_buffer(mm))


class _Lease:
    """Keeps a lent "B" region busy while numpy views of it exist; frees it when they die."""

    def __init__(self, mm):
        self.mm = mm

    def __del__(self):
        try:
            struct.pack_into("<I", self.mm, 0, 0)
        except Exception:
            pass


class _View:
    """__array_interface__ over region memory whose lifetime holds a _Lease."""

    def __init__(self, lease, addr, shape, dtype):
        self.lease = lease
        self.__array_interface__ = {"data": (addr, False), "shape": tuple(shape),
                                    "typestr": dtype.str, "version": 3}


def _bytes_array(buf, shape):
    out, off, n = [], 0, len(buf)
    while off < n:
        (k,) = struct.unpack_from("<I", buf, off)
        out.append(bytes(buf[off + 4:off + 4 + k]))
        off += 4 + k
    arr = np.empty(len(out), dtype=np.object_)
    arr[:] = out
    return arr.reshape(shape)


def _serialize(arr):
    parts = []
    for v in arr.reshape(-1):
        if not isinstance(v, bytes):
            v = str(v).encode("utf-8")
        parts.append(struct.pack("<I", len(v)))
        parts.append(v)
    return b"".join(parts)


class Runtime:
    def __init__(self, sock):
        self.sock = sock
        self.send_lock = threading.Lock()
        self.recv_lock = threading.Lock()
        self.cond = threading.Condition()
        self.queue = collections.deque()  # messages for the main thread
        self.mail = {}  # (kind, id) -> deque of messages for a waiting thread
        self.peer = {}  # (kind, id) -> mmap of inferd's regions
        self.peer_addr = {}  # (kind, id) -> its address here
        self.own = []  # [id, mmap, addr, size, fd or None (announced)]
        self.own_lock = threading.Lock()
        self.ids = itertools.count(1)
        self.buf = bytearray(1 << 20)
        self.view = memoryview(self.buf)
        self.decoupled = False
        self.instance = ""
        self.version_dir = ""
        self.exec_region = None  # (id, addr, size) of the current "E" region

    # -- messages ----------------------------------------------------------------------------

    def send(self, obj, fds=()):
        data = json.dumps(obj, separators=(",", ":")).encode()
        if len(data) > BIG_MESSAGE:  # the body goes in a memfd, first of the fds
            bfd = os.memfd_create("inferd-python-message", os.MFD_CLOEXEC)
            view, done = memoryview(data), 0
            while done < len(data):
                done += os.write(bfd, view[done:])
            data = b'{"t":"big","size":%d}' % len(data)
            fds = [bfd] + list(fds)
        with self.send_lock:
            if fds:
                self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                            array.array("i", fds))])
            else:
                self.sock.send(data)
        for fd in fds:
            os.close(fd)

    def _recv(self):
        n, anc, flags, _ = self.sock.recvmsg_into([self.view], socket.CMSG_SPACE(64 * 4))
        if n == 0:
            os._exit(0)  # inferd closed the channel: it is gone or unloading
        msg = json.loads(self.buf[:n])
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[:len(data) - len(data) % 4])
                fds.extend(a)
        if msg.get("t") == "big":
            parts, got = [], 0
            while got < msg["size"]:
                part = os.pread(fds[0], msg["size"] - got, got)
                if not part:
                    break
                parts.append(part)
                got += len(part)
            os.close(fds[0])
            fds = fds[1:]
            msg = json.loads(b"".join(parts))
        for kind, rid in msg.get("drop", ()):
            self.peer.pop((kind, rid), None)
            self.peer_addr.pop((kind, rid), None)
        for (kind, rid, size), fd in zip(msg.get("regions", ()), fds):
            mm = mmap.mmap(fd, size)
            os.close(fd)
            self.peer[(kind, rid)] = mm
            self.peer_addr[(kind, rid)] = _addr(mm)
        return msg

    def wait(self, pick):
        """Returns pick()'s first non-None value, reading messages while nobody else does."""
        while True:
            with self.cond:
                got = pick()
                if got is not None:
                    return got
                if not self.recv_lock.acquire(blocking=False):
                    self.cond.wait()
                    continue
            try:
                msg = self._recv()
            except OSError:
                os._exit(0)
            with self.cond:
                self.recv_lock.release()
                t = msg.get("t")
                if t == "bls_resp":
                    self.mail.setdefault(("bls", msg["call"]), collections.deque()).append(msg)
                elif t == "cancelled":
                    self.mail.setdefault(("q", msg["q"]), collections.deque()).append(msg)
                else:
                    self.queue.append(msg)
                self.cond.notify_all()

    def next_message(self):
        q = self.queue
        return self.wait(lambda: q.popleft() if q else None)

    def _mailbox(self, key):
        def pick():
            box = self.mail.get(key)
            if box:
                m = box.popleft()
                if not box:
                    del self.mail[key]
                return m
            return None
        return pick

    # -- shared memory -----------------------------------------------------------------------

    def _region(self, size):
        """An own region of at least `size` data bytes, marked lent; returns (entry, fds)."""
        with self.own_lock:
            best = None
            for r in self.own:
                if r[3] >= size and struct.unpack_from("<I", r[1], 0)[0] == 0:
                    if best is None or r[3] < best[3]:
                        best = r
            if best is None:
                cap = MIN_REGION
                while cap < size + HEADER:
                    cap <<= 1
                fd = os.memfd_create("inferd-python-stub", os.MFD_CLOEXEC)
                os.ftruncate(fd, cap)
                mm = mmap.mmap(fd, cap)
                best = [next(self.ids), mm, _addr(mm), cap - HEADER, fd]
                self.own.append(best)
            struct.pack_into("<I", best[1], 0, 1)
            return best

    def encode_tensors(self, tensors, msg, allow_ref=False):
        """Tensor list -> wire entries; data copied into one own region (or referenced in the
        current "E" region).  Adds "regions" to msg and returns the fds to send."""
        entries, plan, total = [], [], 0
        er = self.exec_region if allow_ref else None
        for t in tensors:
            arr = t._array
            if t._dtype == 13:
                data = _serialize(arr)
                size = len(data)
            else:
                data = None
                size = arr.nbytes
                if er is not None and size > 0:
                    p = arr.__array_interface__["data"][0]
                    if er[1] <= p and p + size <= er[1] + er[2] + HEADER:
                        entries.append([t._name, t._dtype, list(arr.shape), "E", er[0],
                                        p - er[1] - HEADER, size])
                        continue
            off = total
            total += (size + 63) & ~63
            entries.append([t._name, t._dtype, list(arr.shape), "S", 0, off, size])
            plan.append((len(entries) - 1, arr, data, off, size))
        fds = []
        if plan:
            r = self._region(max(total, 1))
            base = r[2] + HEADER
            for i, arr, data, off, size in plan:
                entries[i][4] = r[0]
                if size == 0:
                    continue
                if data is not None:
                    ctypes.memmove(base + off, data, size)
                else:
                    ctypes.memmove(base + off, arr.ctypes.data, size)
            if r[4] is not None:
                msg["regions"] = [["S", r[0], r[3] + HEADER]]
                fds.append(r[4])
                r[4] = None
        return entries, fds

    def decode_tensors(self, entries, copy=False):
        out, leases = [], {}
        for name, dtype, shape, kind, rid, off, size in entries:
            mm = self.peer[(kind, rid)]
            if kind == "B" and (kind, rid) not in leases:
                leases[(kind, rid)] = _Lease(mm)  # frees the region once no view needs it
            if dtype == 13:
                arr = _bytes_array(memoryview(mm)[HEADER + off:HEADER + off + size], shape)
            elif kind == "B":
                arr = np.asarray(_View(leases[(kind, rid)], self.peer_addr[(kind, rid)] + HEADER
                                       + off, shape, DTYPES[dtype]))
            else:
                count = size // ITEMSIZE[dtype]
                arr = np.frombuffer(mm, DTYPES[dtype], count, HEADER + off).reshape(shape)
                if copy:
                    arr = arr.copy()
            out.append(pb.Tensor._wrap(name, dtype, shape, arr))
        return out

    # -- services for pb_utils ---------------------------------------------------------------

    def response_entry(self, response, requested, msg, allow_ref=False):
        if response.has_error():
            err = response.error()
            return {"e": [TO_INFERD.get(err.code(), 13), err.message()]}, []
        outs = [t for t in response.output_tensors()
                if requested is None or t.name() in requested]
        entries, fds = self.encode_tensors(outs, msg, allow_ref)
        entry = {"o": entries}
        if response._parameters:
            entry["p"] = response._parameters
        return entry, fds

    def send_response(self, request, response, flags):
        msg = {"t": "send", "k": request._key, "flags": flags, "resp": None}
        fds = []
        if response is not None:
            msg["resp"], fds = self.response_entry(response, set(request._outputs), msg)
        self.send(msg, fds)

    def is_cancelled(self, key):
        q = next(self.ids)
        self.send({"t": "is_cancelled", "k": key, "q": q})
        return bool(self.wait(self._mailbox(("q", q)))["v"])

    def log(self, level, message):
        self.send({"t": "log", "level": level, "msg": message})

    def bls(self, request, decoupled):
        call = next(self.ids)
        msg = {"t": "bls", "call": call, "model": request._model, "version": request._version,
               "id": request._id, "corr": request._corr, "flags": request._flags,
               "timeout": request._timeout, "params": request._params,
               "outs": request._outputs, "decoupled": bool(decoupled)}
        msg["in"], fds = self.encode_tensors(request._inputs, msg)
        self.send(msg, fds)
        it = _ResponseIterator(self, call)
        if decoupled:
            return it
        last = None
        for r in it:
            if last is None or r.output_tensors() or r.has_error():
                last = r
        return last if last is not None else pb.InferenceResponse()

    def bls_next(self, call):
        m = self.wait(self._mailbox(("bls", call)))
        if m.get("error"):
            code, text = m["error"]
            return pb.InferenceResponse(error=pb.TritonError(text, FROM_INFERD.get(code, 1))), True
        resp = m.get("resp")
        r = None
        if resp is not None:
            r = pb.InferenceResponse(self.decode_tensors(resp.get("o", [])))
            p = resp.get("p")
            r._parameters = json.loads(p) if isinstance(p, str) else (p or {})
        return r, bool(m.get("final"))


class _ResponseIterator:
    def __init__(self, rt, call):
        self.rt, self.call, self.done = rt, call, False

    def __iter__(self):
        return self

    def __next__(self):
        while not self.done:
            r, final = self.rt.bls_next(self.call)
            if final:
                self.done = True
                return r if r is not None else pb.InferenceResponse()
            if r is not None:
                return r
        raise StopIteration

    def cancel(self):
        pass


pb.ResponseIterator = _ResponseIterator


def _watch_parent(ppid):
    while True:
        time.sleep(0.5)
        if os.getppid() != ppid:
            os._exit(1)


def _load_model(path, version_dir, model_dir):
    for d in (version_dir, model_dir):
        if d not in sys.path:
            sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location("model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model"] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "TritonPythonModel"):
        raise RuntimeError("%s does not define class TritonPythonModel" % path)
    return module.TritonPythonModel


def _what(e):
    return "%s: %s" % (type(e).__name__, e)


class Instance:
    def __init__(self, rt):
        self.rt = rt
        self.model = None
        self.loop = None

    def run(self):
        rt = self.rt
        while True:
            msg = rt.next_message()
            t = msg["t"]
            if t == "exec":
                self.execute(msg)
            elif t == "init":
                self.initialize(msg)
            elif t == "fini":
                fin = getattr(self.model, "finalize", None)
                if fin is not None:
                    try:
                        fin()
                    except Exception as e:
                        rt.log(2, "finalize of '%s' raised %s" % (rt.instance, _what(e)))
                rt.send({"t": "fini_done"})
                return

    def initialize(self, msg):
        rt = self.rt
        rt.decoupled = bool(msg["decoupled"])
        rt.instance = msg["args"]["model_instance_name"]
        rt.version_dir = msg["version_dir"]
        try:
            cls = _load_model(msg["model_file"], msg["version_dir"], msg["model_dir"])
            self.model = cls()
            init = getattr(self.model, "initialize", None)
            if init is not None:
                r = init(dict(msg["args"]))
                if inspect.iscoroutine(r):
                    self._run(r)
            rt.send({"t": "init_done", "error": None})
        except BaseException as e:
            rt.send({"t": "init_done", "error": _what(e), "trace": traceback.format_exc()})
            os._exit(0)

    def _run(self, coro):
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def execute(self, msg):
        rt = self.rt
        copy = rt.decoupled
        er = msg.get("er")
        rt.exec_region = None
        if er is not None:
            rt.exec_region = (er, rt.peer_addr[("E", er)], len(rt.peer[("E", er)]) - HEADER)
        requests = []
        for r in msg["reqs"]:
            inputs = rt.decode_tensors(r["in"], copy)
            requests.append(pb.InferenceRequest._incoming(
                r["k"], r["id"], r["corr"], r["flags"], r["timeout"], r["params"], inputs, r["outs"]))
        reply = {"t": "exec_done"}
        fds = []
        try:
            ret = self.model.execute(requests)
            if inspect.iscoroutine(ret):
                if rt.decoupled:
                    asyncio.run_coroutine_threadsafe(ret, self._loop())
                    ret = None
                else:
                    ret = self._run(ret)
            if rt.decoupled:
                if ret is not None:
                    raise pb.TritonModelException(
                        "Python model '%s' is using the decoupled mode and the execute function "
                        "must return None." % rt.instance)
                reply["resps"] = None
            else:
                reply["resps"], fds = self._responses(requests, ret, reply)
        except BaseException as e:
            for fd in fds:
                os.close(fd)
            fds = []
            reply = {"t": "exec_done", "error": [13, "Failed to process the request(s) for model "
                                                 "'%s', message: %s" % (rt.instance, _what(e))]}
            for r in requests:
                if r._sender is not None:
                    r._sender._closed = True
        rt.exec_region = None
        rt.send(reply, fds)

    def _loop(self):
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, daemon=True).start()
        return self.loop

    def _responses(self, requests, ret, reply):
        if ret is None and all(r._answered for r in requests):
            return [None] * len(requests), []
        if not isinstance(ret, list):
            raise pb.TritonModelException(
                "Expected a list in the execute return, found type '%s'." % type(ret))
        if len(ret) != len(requests):
            raise pb.TritonModelException(
                "Number of InferenceResponse objects do not match the number of InferenceRequest "
                "objects. InferenceRequest(s) size is:%d, and InferenceResponse(s) size is:%d\n"
                % (len(requests), len(ret)))
        out, fds = [], []
        for req, resp in zip(requests, ret):
            if resp is None:
                out.append(None)
                continue
            if not isinstance(resp, pb.InferenceResponse):
                raise pb.TritonModelException(
                    "Expected an 'InferenceResponse' object in the execute function return list, "
                    "found type '%s'." % type(resp))
            sub = {}
            entry, f = self.rt.response_entry(resp, set(req._outputs), sub, allow_ref=True)
            if "regions" in sub:
                reply.setdefault("regions", []).extend(sub["regions"])
            out.append(entry)
            fds.extend(f)
        return out, fds


def autocomplete(rt):
    msg = rt.next_message()
    try:
        cls = _load_model(msg["model_file"], msg["version_dir"], msg["model_dir"])
        fn = getattr(cls, "auto_complete_config", None)
        if fn is None:
            rt.send({"t": "ac_done", "config": None})
            return
        cfg = fn(pb.ModelConfig(msg["config"]))
        if not isinstance(cfg, pb.ModelConfig):
            raise pb.TritonModelException(
                "auto_complete_config function in model '%s' must return a valid pb.ModelConfig "
                "object." % msg["model_name"])
        rt.send({"t": "ac_done", "config": json.dumps(cfg.as_dict())})
    except BaseException as e:
        rt.send({"t": "ac_done", "error": _what(e)})


def main():
    fd, ppid, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)
    threading.Thread(target=_watch_parent, args=(ppid,), daemon=True).start()
    rt = Runtime(sock)
    pb._runtime = rt if mode == "instance" else None
    if mode == "autocomplete":
        autocomplete(rt)
    else:
        Instance(rt).run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
