#!/usr/bin/python3
"""Replaces (or appends) one benchmark's section of docs/performance.md.

Usage: update_perf_doc.py NAME < markdown
The section lives between <!-- bench:NAME --> and <!-- /bench:NAME --> so
each benchmark rewrites only its own results."""
import os
import re
import sys

name = sys.argv[1]
doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "performance.md")
content = sys.stdin.read().strip() + "\n"
begin, end = "<!-- bench:%s -->" % name, "<!-- /bench:%s -->" % name
block = "%s\n%s%s" % (begin, content, end)
text = open(doc).read() if os.path.exists(doc) else "# Performance\n"
if begin in text and end in text:
    text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(doc, "w").write(text)
print("updated docs/performance.md section '%s'" % name)
