#!/usr/bin/python3
"""The Rook model store (deploy/kubernetes/components/rook-model-store, through
overlays/rook) run for real against Ceph's RADOS Gateway (tests/s3/ceph_rgw.py,
the same daemon Rook deploys), with no Kubernetes:

1. The test plays Rook's bucket provisioner for the ObjectBucketClaim: a new
   RGW user with its own keys (radosgw-admin), a bucket named from the claim's
   generateBucketName, created by that user; the claim's ConfigMap (BUCKET_HOST,
   BUCKET_PORT, BUCKET_NAME, BUCKET_REGION, BUCKET_SUBREGION) and Secret
   (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) as Rook writes them.
2. The inferd container of the rendered overlay gets its environment as the
   kubelet builds it (envFrom, then env) and its args with $(VAR) expanded by
   the kubelet's rules (kube_env.py); only ports, addresses, the cache path and
   the intervals are substituted for a test on loopback.
3. `simple` is uploaded with boto3 using the claim's keys (a standard S3
   client, as docs/rook.md shows), inferd serves it; then a new version of
   `simple` and a new model are uploaded and poll mode serves them.

Environment: INFERD_BIN, INFERD_S3_FIXTURE (ctest sets both; the Ceph fixture
is started once per ctest run). Skips when the Ceph packages or the fixture are
missing, or when kubectl's kustomize cannot render components (< v3.7).
"""

import json
import os
import re
import secrets
import shutil
import string
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TESTS, "e2e"))
sys.path.insert(0, os.path.join(TESTS, "s3"))
import ceph_rgw  # noqa: E402
import harness  # noqa: E402
import kube_env  # noqa: E402
import s3_util  # noqa: E402
from deploy_render import KUBECTL, REPO_ROOT, by_kind, flag, kustomize_supports_components, render  # noqa: E402

MODELS = os.path.join(REPO_ROOT, "examples", "models")
POLL_TIMEOUT_S = 60


def skip_reason():
    if KUBECTL is None:
        return "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)"
    ok, why = kustomize_supports_components()
    return None if ok else why


class RookProvisioner:
    """What Rook's bucket provisioner does for an ObjectBucketClaim (lib-bucket-
    provisioner + Rook's RGW provisioner): an S3 user for the claim, the bucket,
    and the ConfigMap and Secret data."""

    def __init__(self, fixture):
        self.fixture = fixture
        self.cluster = ceph_rgw.Cluster(fixture["dir"])

    def provision(self, claim):
        spec, meta = claim["spec"], claim["metadata"]
        suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8))
        bucket = spec.get("bucketName") or "%s-%s" % (spec["generateBucketName"], suffix)
        uid = "obc-%s-%s-%s" % (meta["namespace"], meta["name"], suffix)
        # radosgw-admin makes the keys, as for Rook's claim users; one bucket each.
        out = self.cluster.run(["radosgw-admin", "user", "create", "--uid", uid, "--display-name", uid,
                                "--max-buckets", "1"])
        keys = json.loads(out)["keys"][0]
        host, port = self.fixture["host_port"].rsplit(":", 1)
        config_map = {"BUCKET_HOST": host, "BUCKET_PORT": port, "BUCKET_NAME": bucket,
                      "BUCKET_REGION": self.fixture["region"], "BUCKET_SUBREGION": ""}
        secret = {"AWS_ACCESS_KEY_ID": keys["access_key"], "AWS_SECRET_ACCESS_KEY": keys["secret_key"]}
        s3 = s3_util._client(secret["AWS_ACCESS_KEY_ID"], secret["AWS_SECRET_ACCESS_KEY"])
        try:
            s3.create_bucket(Bucket=bucket)
        finally:
            s3.close()
        return config_map, secret


class ContainerServer(harness.Server):
    """inferd started with exactly the given argument list (the container's)."""

    def __init__(self, args, env):
        super().__init__([], env=env)
        self.container_args = list(args)

    def command(self):
        return [self.binary] + self.container_args


def for_loopback(args, cache_dir):
    """The container's args with what differs between a pod and this test
    replaced in place: ports (the kernel picks), listeners on 127.0.0.1, the
    cache directory, a 1 s poll and no drain delay. Every other flag is the
    manifest's."""
    replace = {"http-port": "0", "grpc-port": "0", "metrics-port": "0", "model-cache-dir": cache_dir,
               "repository-poll-secs": "1", "drain-delay-secs": "0"}
    out, seen = [], set()
    for a in args:
        name = a[2:].split("=", 1)[0] if a.startswith("--") else None
        if name in replace:
            a = "--%s=%s" % (name, replace[name])
            seen.add(name)
        out.append(a)
    missing = set(replace) - seen
    if missing:
        raise AssertionError("the container has no %s flag to substitute: %s" % (sorted(missing), args))
    return out + ["--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1"]


def upload_model(s3, bucket, prefix, name, versions, source=None):
    """A model directory as `aws s3 cp --recursive` would upload it, plus a
    directory marker (<model>/<version>/) for each version, which S3 tools do
    not create for an empty directory and inferd needs to see the version."""
    keys = []
    if source:
        for root, _, files in os.walk(source):
            for f in files:
                path = os.path.join(root, f)
                key = "%s/%s/%s" % (prefix, name, os.path.relpath(path, source).replace(os.sep, "/"))
                with open(path, "rb") as fh:
                    s3.put_object(Bucket=bucket, Key=key, Body=fh.read())
                keys.append(key)
    for v in versions:
        key = "%s/%s/%d/" % (prefix, name, v)
        s3.put_object(Bucket=bucket, Key=key, Body=b"")
        keys.append(key)
    return keys


@unittest.skipIf(skip_reason(), skip_reason())
class RookModelStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = s3_util.fixture()   # SkipTest where Ceph or the fixture is missing
        docs = render("rook")
        cls.claim = by_kind(docs, "ObjectBucketClaim")
        cls.container = by_kind(docs, "Deployment", "inferd")["spec"]["template"]["spec"]["containers"][0]

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-rook-")
        self.server = None

    def tearDown(self):
        try:
            if self.server is not None and self.server.alive():
                self.server.stop()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def infer_simple(self, client, version):
        in0, in1 = list(range(16)), [3] * 16
        req, _ = harness.simple_request(in0, in1)
        r = client.infer("simple", req)
        self.assertEqual(r.status, 200, r.body[:300])
        body = r.json()
        self.assertEqual(body["model_version"], str(version))
        out = harness.outputs_by_name(body)
        self.assertEqual(out["OUTPUT0"]["data"], [a + b for a, b in zip(in0, in1)])
        self.assertEqual(out["OUTPUT1"]["data"], [a - b for a, b in zip(in0, in1)])

    def test_serves_the_claims_bucket_and_polls_it(self):
        name = self.claim["metadata"]["name"]
        config_map, secret = RookProvisioner(self.fx).provision(self.claim)

        # The container as the kubelet starts it.
        env = kube_env.container_environment(self.container, {name: config_map}, {name: secret})
        self.assertEqual(set(env), set(config_map) | set(secret))
        _, args = kube_env.expand_args(self.container, env)
        self.assertFalse([a for a in args if "$(" in a], args)
        bucket = config_map["BUCKET_NAME"]
        url = flag(args, "model-repository")
        m = re.fullmatch(r"s3://http://%s/%s/(.+)" % (re.escape(self.fx["host_port"]), re.escape(bucket)), url)
        self.assertTrue(m, url)
        prefix = m.group(1)
        self.assertEqual(flag(args, "model-control-mode"), "poll")
        for secret_value in secret.values():
            self.assertFalse([a for a in args if secret_value in a], "a key on the command line")

        # Upload with a standard S3 client and the claim's keys.
        s3 = s3_util._client(secret["AWS_ACCESS_KEY_ID"], secret["AWS_SECRET_ACCESS_KEY"])
        self.addCleanup(s3.close)
        upload_model(s3, bucket, prefix, "simple", [1], os.path.join(MODELS, "simple"))

        self.server = ContainerServer(for_loopback(args, os.path.join(self.tmp, "cache")), env).start()
        client = self.server.client()
        self.assertTrue(harness.wait_until(lambda: client.get("/v2/health/ready").status == 200, 60),
                        self.server.log_tail())
        self.infer_simple(client, 1)
        log = "\n".join(self.server.log())
        self.assertIn("credentials: environment", log)
        self.assertNotIn(secret["AWS_SECRET_ACCESS_KEY"], log)

        # A new version of simple and a new model: poll mode serves both.
        upload_model(s3, bucket, prefix, "simple", [2])
        upload_model(s3, bucket, prefix, "identity", [1], os.path.join(MODELS, "identity"))
        ready = lambda: (client.get("/v2/models/simple/versions/2/ready").status == 200  # noqa: E731
                         and client.get("/v2/models/identity/ready").status == 200)
        self.assertTrue(harness.wait_until(ready, POLL_TIMEOUT_S), self.server.log_tail())
        self.infer_simple(client, 2)
        r = client.infer("identity", {"inputs": [{"name": "INPUT0", "shape": [3], "datatype": "FP32",
                                                  "data": [1.5, -2.0, 0.25]}]})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(harness.outputs_by_name(r.json())["OUTPUT0"]["data"], [1.5, -2.0, 0.25])
        self.server.stop()

    def test_other_users_keys_are_refused(self):
        """The claim's bucket belongs to the claim's user: another S3 user's keys
        (the fixture's second user) do not get the models."""
        name = self.claim["metadata"]["name"]
        config_map, secret = RookProvisioner(self.fx).provision(self.claim)
        wrong = {"AWS_ACCESS_KEY_ID": self.fx["other_access_key"], "AWS_SECRET_ACCESS_KEY": self.fx["other_secret_key"]}
        env = kube_env.container_environment(self.container, {name: config_map}, {name: wrong})
        _, args = kube_env.expand_args(self.container, env)
        s = ContainerServer(for_loopback(args, os.path.join(self.tmp, "cache")), env)
        try:
            s.start()
        except harness.ServerError:
            pass
        code = s.wait(60)
        self.assertEqual(code, 1, s.log_tail())
        self.assertRegex("\n".join(s.log()), r"access denied|AccessDenied|403")


if __name__ == "__main__":
    unittest.main(verbosity=2)
