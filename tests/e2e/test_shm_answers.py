#!/usr/bin/python3
"""Shared-memory answers that follow Triton, on both protocols of one real inferd (client shared
memory allowed, no GPU): unregistering a region that is not registered succeeds (system and CUDA,
HTTP 200 / gRPC OK), and registering CUDA shared memory on a server without GPUs is
INVALID_ARGUMENT (HTTP 400) "failed to register CUDA shared memory region: '<r>', GPUs not
supported (<inferd's reason>)".

Runs with Debian's /usr/bin/python3 and python3-grpcio; gRPC messages are generated from proto/
as in test_grpc_compat.py."""

import base64
import os
import sys
import unittest
from multiprocessing import shared_memory

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_grpc_compat import SERVICE, GrpcServerTestCase, grpc  # noqa: E402

INVALID_ARGUMENT = 3
NO_GPU = "GPUs not supported ("


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class SharedMemoryAnswersTest(GrpcServerTestCase):

    SERVER_ARGS = ("--allow-client-shm=true",)

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
        return [repo]

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail(30))
        self.assertEqual(self.client.get("/v2/health/live").status, 200)

    def call(self, method, request):
        response = getattr(self.pb, method + "Response")
        rpc = self.channel.unary_unary(SERVICE + method,
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=response.FromString)
        return rpc(request, timeout=30)

    def call_error(self, method, request):
        try:
            self.call(method, request)
        except grpc.RpcError as e:
            return e.code().value[0], e.details()
        self.fail("gRPC %s succeeded" % method)

    def test_unregister_of_unknown_names_succeeds(self):
        pb = self.pb
        for kind in ("systemsharedmemory", "cudasharedmemory"):
            r = self.client.post("/v2/%s/region/never-registered/unregister" % kind)
            self.assertEqual(r.status, 200, "%s: %s" % (kind, r))
        self.call("SystemSharedMemoryUnregister",
                  pb.SystemSharedMemoryUnregisterRequest(name="never-registered"))
        self.call("CudaSharedMemoryUnregister",
                  pb.CudaSharedMemoryUnregisterRequest(name="never-registered"))

    def test_unregister_as_the_other_kind_leaves_the_region(self):
        pb = self.pb
        region = shared_memory.SharedMemory(create=True, size=64)
        try:
            self.call("SystemSharedMemoryRegister", pb.SystemSharedMemoryRegisterRequest(
                name="sys", key="/" + region.name, byte_size=64))
            self.call("CudaSharedMemoryUnregister", pb.CudaSharedMemoryUnregisterRequest(name="sys"))
            self.assertEqual(self.client.post("/v2/cudasharedmemory/region/sys/unregister").status,
                             200)
            status = self.call("SystemSharedMemoryStatus",
                               pb.SystemSharedMemoryStatusRequest(name="sys"))
            self.assertIn("sys", status.regions)
            self.call("SystemSharedMemoryUnregister",
                      pb.SystemSharedMemoryUnregisterRequest(name="sys"))
            self.call("SystemSharedMemoryUnregister",
                      pb.SystemSharedMemoryUnregisterRequest(name="sys"))  # again: nothing to do
            self.assertEqual(self.client.get("/v2/systemsharedmemory/region/sys/status").status,
                             404)
        finally:
            region.close()
            region.unlink()

    def test_cuda_register_without_gpus_is_invalid_argument(self):
        handle = bytes(64)
        r = self.client.post_json("/v2/cudasharedmemory/region/g/register",
                                  {"raw_handle": {"b64": base64.b64encode(handle).decode()},
                                   "device_id": 0, "byte_size": 16})
        self.assertEqual(r.status, 400, r)
        http_message = r.json()["error"]
        code, grpc_message = self.call_error(
            "CudaSharedMemoryRegister",
            self.pb.CudaSharedMemoryRegisterRequest(name="g", raw_handle=handle, device_id=0,
                                                    byte_size=16))
        self.assertEqual(code, INVALID_ARGUMENT, grpc_message)
        for message in (http_message, grpc_message):
            self.assertTrue(message.startswith(
                "failed to register CUDA shared memory region: 'g', " + NO_GPU), message)
            self.assertIn("no CUDA device", message)
        self.assertEqual(http_message, grpc_message)
        self.assertEqual(self.client.get("/v2/cudasharedmemory/status").json(), [])


if __name__ == "__main__":
    unittest.main()
