"""The Ceph RGW fixture itself, through boto3: what the S3 repository tests rely on
(signed requests, listing pages, awkward keys, the two kinds of 403, an outage
and the data surviving it). No inferd here.
"""

import concurrent.futures
import hashlib
import os
import shutil
import socket
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3_util  # noqa: E402

try:
    import botocore.exceptions
except ImportError:  # pragma: no cover - s3_util.fixture() fails first
    botocore = None


def error_of(call):
    """(HTTP status, S3 error code) of a call that must fail."""
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
    raise AssertionError("the call succeeded")


class CephRgwFixtureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = s3_util.fixture()
        cls.s3 = s3_util.client()
        cls.addClassCleanup(cls.s3.close)
        cls.bucket = s3_util.make_bucket("fixture")

    def test_s3_json(self):
        fx = self.fx
        self.assertEqual(fx["endpoint"], "http://" + fx["host_port"])
        self.assertTrue(fx["host_port"].startswith("127.0.0.1:"))
        self.assertEqual(fx["region"], "us-east-1")
        self.assertNotEqual(fx["access_key"], fx["other_access_key"])
        self.assertEqual(sorted(fx["pids"]), ["mon", "osd", "rgw"])
        self.assertEqual(s3_util.repository_url("b", "/models/"),
                         "s3://http://%s/b/models" % fx["host_port"])
        self.assertEqual(s3_util.repository_url("b"), "s3://http://%s/b" % fx["host_port"])
        env = s3_util.server_env()
        self.assertEqual(env, {"AWS_ACCESS_KEY_ID": fx["access_key"],
                               "AWS_SECRET_ACCESS_KEY": fx["secret_key"],
                               "AWS_DEFAULT_REGION": "us-east-1"})

    def test_put_get_and_etag(self):
        data = os.urandom(100_000)
        etag = s3_util.put(self.bucket, "models/m/1/model.bin", data)
        # A single-part upload's ETag is the quoted MD5 of the body.
        self.assertEqual(etag, '"%s"' % hashlib.md5(data).hexdigest())
        got = self.s3.get_object(Bucket=self.bucket, Key="models/m/1/model.bin")
        self.assertEqual(got["Body"].read(), data)
        self.assertEqual(got["ETag"], etag)
        r = self.s3.get_object(Bucket=self.bucket, Key="models/m/1/model.bin", Range="bytes=10-19")
        self.assertEqual(r["Body"].read(), data[10:20])
        self.assertEqual(error_of(lambda: self.s3.get_object(Bucket=self.bucket, Key="nope")),
                         (404, "NoSuchKey"))
        self.assertEqual(error_of(lambda: self.s3.list_objects_v2(Bucket="no-such-bucket-x1")),
                         (404, "NoSuchBucket"))

    def test_upload_tree_and_delete_prefix(self):
        tmp = tempfile.mkdtemp(prefix="inferd-s3-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.makedirs(os.path.join(tmp, "simple", "1"))
        with open(os.path.join(tmp, "simple", "config.pbtxt"), "w") as f:
            f.write('name: "simple"\n')
        with open(os.path.join(tmp, "simple", "1", "model.txt"), "w") as f:
            f.write("x")
        keys = s3_util.upload_tree(self.bucket, "tree/", tmp)
        self.assertEqual(keys, ["tree/simple/1/model.txt", "tree/simple/config.pbtxt"])
        self.assertEqual(s3_util.list_keys(self.bucket, "tree/"), keys)
        self.assertEqual(s3_util.delete_prefix(self.bucket, "tree/"), 2)
        self.assertEqual(s3_util.list_keys(self.bucket, "tree/"), [])

    def test_listing_pages_over_2500_objects(self):
        bucket = s3_util.make_bucket("pages")
        keys = ["many/%04d" % i for i in range(2500)]
        s3 = s3_util.client(max_pool_connections=16)
        self.addCleanup(s3.close)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=b"."), keys))
        upload_s = time.monotonic() - t0
        self.assertLess(upload_s, 45, "2,500 small PUTs took %.1f s" % upload_s)
        pages, listed, token = 0, [], None
        while True:
            args = dict(Bucket=bucket, Prefix="many/")
            if token:
                args["ContinuationToken"] = token
            page = self.s3.list_objects_v2(**args)
            pages += 1
            listed += [o["Key"] for o in page["Contents"]]
            if not page["IsTruncated"]:
                break
            token = page["NextContinuationToken"]
        # RGW's page is S3's 1,000 keys; keys come back in byte order.
        self.assertEqual(pages, 3)
        self.assertEqual(listed, keys)

    def test_awkward_keys(self):
        keys = ["odd/with space/a b.txt", "odd/ünïcödé/日本.bin", "odd/plus+sign=1&x.txt",
                "odd/%41literal-percent"]
        for i, key in enumerate(keys):
            s3_util.put(self.bucket, key, b"%d" % i)
        for i, key in enumerate(keys):
            self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read(),
                             b"%d" % i, key)
        self.assertEqual(sorted(s3_util.list_keys(self.bucket, "odd/")),
                         sorted(keys, key=lambda k: k.encode()))

    def test_wrong_secret_and_other_user(self):
        fx = self.fx
        s3_util.put(self.bucket, "private/k", b"secret")
        wrong = s3_util._client(fx["access_key"], "x" * 40)
        self.addCleanup(wrong.close)
        self.assertEqual(error_of(lambda: wrong.list_objects_v2(Bucket=self.bucket)),
                         (403, "SignatureDoesNotMatch"))
        unknown = s3_util._client("NOSUCHACCESSKEY00000", fx["secret_key"])
        self.addCleanup(unknown.close)
        self.assertEqual(error_of(lambda: unknown.get_object(Bucket=self.bucket, Key="private/k")),
                         (403, "InvalidAccessKeyId"))
        other = s3_util.other_client()
        self.addCleanup(other.close)
        self.assertEqual(error_of(lambda: other.get_object(Bucket=self.bucket, Key="private/k")),
                         (403, "AccessDenied"))
        self.assertEqual(error_of(lambda: other.list_objects_v2(Bucket=self.bucket)),
                         (403, "AccessDenied"))

    def test_z_outage_and_recovery(self):
        # Last (unittest runs tests in name order): the others need radosgw up.
        s3_util.put(self.bucket, "durable/k", b"kept")
        host, port = self.fx["host_port"].split(":")
        s3_util.stop_rgw()
        try:
            with self.assertRaises(ConnectionRefusedError):
                socket.create_connection((host, int(port)), timeout=5).close()
        finally:
            s3_util.start_rgw()
        self.assertNotEqual(s3_util.fixture()["pids"]["rgw"], self.fx["pids"]["rgw"])
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="durable/k")["Body"].read(),
                         b"kept")


if __name__ == "__main__":
    unittest.main()
