"""Helpers for the S3 end-to-end tests (e2e/test_s3_*.py): the Ceph RADOS Gateway
that tests/s3/ceph_rgw.py starts once per ctest run, reached with boto3.

* ``fixture()``: the parsed s3.json (endpoint, region, two users' keys, pids).
  Skips the test only where it cannot run: INFERD_S3_FIXTURE unset (not started
  by ctest) or the Ceph packages not installed. A missing s3.json with Ceph
  installed is an error: the fixture failed, and the tests must say so.
* ``client()`` / ``other_client()``: new boto3 S3 clients (the caller closes
  them), path-style, as the owner of the test buckets and as a second user who
  owns nothing.
* ``make_bucket()``, ``put()``, ``upload_tree()``, ``delete_prefix()``.
* ``repository_url(bucket, prefix)``: what ``--model-repository`` takes;
  ``server_env()``: the credentials for ``harness.Server(..., env=...)``.
* ``stop_rgw()`` / ``start_rgw()`` / ``restart_rgw()``: a store outage (the
  cluster stays up; radosgw comes back on the same port).

Environment:
  INFERD_S3_FIXTURE  path of s3.json (ctest sets it to <build>/ceph-rgw/s3.json)

Run one by hand:
  /usr/bin/python3 tests/s3/ceph_rgw.py start /tmp/rgw
  INFERD_S3_FIXTURE=/tmp/rgw/s3.json /usr/bin/python3 tests/e2e/test_s3_fixture.py
  /usr/bin/python3 tests/s3/ceph_rgw.py stop /tmp/rgw
"""

import atexit
import json
import os
import subprocess
import sys
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CEPH_RGW = os.path.join(os.path.dirname(HERE), "s3", "ceph_rgw.py")
sys.path.insert(0, os.path.dirname(CEPH_RGW))
import ceph_rgw  # noqa: E402

try:
    import boto3
    import botocore.config
except ImportError:  # pragma: no cover - fixture() says so
    boto3 = None


def fixture():
    """The fixture's s3.json as a dict (read each time: start_rgw() changes the pids),
    plus "dir", the fixture's directory; unittest.SkipTest where S3 tests cannot run."""
    path = os.environ.get("INFERD_S3_FIXTURE")
    if not path:
        raise unittest.SkipTest("Ceph RGW fixture not available: INFERD_S3_FIXTURE is not set "
                                "(ctest sets it; see tests/e2e/s3_util.py to run by hand)")
    _, missing = ceph_rgw.find_binaries()
    if missing:
        raise unittest.SkipTest("Ceph RGW fixture not available: ceph-mon/ceph-osd/radosgw not "
                                "installed (missing: %s)" % ", ".join(missing))
    if boto3 is None:
        raise AssertionError("python3-boto3 is not installed (scripts/install-deps.sh)")
    if not os.path.isfile(path):
        raise AssertionError("INFERD_S3_FIXTURE=%s does not exist although Ceph is installed: "
                             "the fixture did not start (see s3_ceph_rgw_start's output)" % path)
    with open(path) as f:
        state = json.load(f)
    state["dir"] = os.path.dirname(os.path.abspath(path))
    return state


def _client(access_key, secret_key, **config):
    f = fixture()
    # Path-style (http://host:port/bucket/key), as inferd addresses RGW; one try
    # per call, so that a test sees an outage as it happens.
    cfg = dict(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
               connect_timeout=5, read_timeout=30, max_pool_connections=32)
    cfg.update(config)
    return boto3.client("s3", endpoint_url=f["endpoint"], region_name=f["region"],
                        aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                        config=botocore.config.Config(**cfg))


def client(**config):
    """A new boto3 S3 client of the user who owns the test buckets; ``config`` goes to
    botocore.config.Config (e.g. retries=...). The caller closes it (``close()``)."""
    f = fixture()
    return _client(f["access_key"], f["secret_key"], **config)


def other_client(**config):
    """A new boto3 S3 client of a second user, who may not read the first one's
    buckets. The caller closes it."""
    f = fixture()
    return _client(f["other_access_key"], f["other_secret_key"], **config)


_shared_client = None


def _shared():
    # The helpers below share one owner's client (and its connection pool).
    global _shared_client
    if _shared_client is None:
        _shared_client = client()
        atexit.register(_shared_client.close)
    return _shared_client


def make_bucket(name="test"):
    """Creates a bucket named ``<name>-<random>`` (unique per call, valid S3 name) and
    returns its name. Buckets are not deleted: the cluster is thrown away at the end."""
    base = "".join(c if c.isalnum() or c == "-" else "-" for c in name.lower()).strip("-")
    bucket = "%s-%s" % (base[:40] or "test", uuid.uuid4().hex[:12])
    _shared().create_bucket(Bucket=bucket)
    return bucket


def put(bucket, key, data):
    """Writes one object; ``data`` is bytes (or str, written as UTF-8). Returns its ETag."""
    if isinstance(data, str):
        data = data.encode()
    return _shared().put_object(Bucket=bucket, Key=key, Body=data)["ETag"]


def upload_tree(bucket, prefix, local_dir):
    """Uploads every file under local_dir to ``prefix/<relative path>`` ('/'
    separators); returns the sorted keys. An empty prefix puts the tree at the root."""
    s3 = _shared()
    keys = []
    for root, _, files in os.walk(local_dir):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, local_dir).replace(os.sep, "/")
            key = prefix.rstrip("/") + "/" + rel if prefix.strip("/") else rel
            with open(path, "rb") as f:
                s3.put_object(Bucket=bucket, Key=key, Body=f.read())
            keys.append(key)
    return sorted(keys)


def list_keys(bucket, prefix=""):
    """Every key under prefix, in listing order."""
    s3 = _shared()
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    return keys


def delete_prefix(bucket, prefix):
    """Deletes every object whose key starts with prefix; returns how many."""
    s3 = _shared()
    keys = list_keys(bucket, prefix)
    for i in range(0, len(keys), 1000):
        s3.delete_objects(Bucket=bucket, Delete={
            "Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
    return len(keys)


def repository_url(bucket, prefix=""):
    """``s3://http://127.0.0.1:PORT/bucket/prefix``, what --model-repository takes."""
    url = "s3://%s/%s" % (fixture()["endpoint"], bucket)
    return url + "/" + prefix.strip("/") if prefix.strip("/") else url


def server_env(other_user=False):
    """The environment that gives inferd the fixture's credentials (for
    ``harness.Server(..., env=server_env())``)."""
    f = fixture()
    prefix = "other_" if other_user else ""
    return {"AWS_ACCESS_KEY_ID": f[prefix + "access_key"],
            "AWS_SECRET_ACCESS_KEY": f[prefix + "secret_key"],
            "AWS_DEFAULT_REGION": f["region"]}


def _ceph_rgw(command):
    p = subprocess.run([sys.executable, CEPH_RGW, command, fixture()["dir"]],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("ceph_rgw.py %s failed (%d):\n%s%s"
                             % (command, p.returncode, p.stdout, p.stderr))


def stop_rgw():
    """Stops radosgw (connections refused on its port); the cluster keeps the data."""
    _ceph_rgw("stop-rgw")


def start_rgw():
    """Starts radosgw again on the same port; returns once a signed request succeeds."""
    _ceph_rgw("start-rgw")


def restart_rgw():
    _ceph_rgw("restart-rgw")
