#!/usr/bin/env python3
"""Checks that every relative link of README.md, CONTRIBUTING.md and docs/guide/*.md names a
file (or directory) of the repository, and that a #fragment names a heading of the page it
points to (GitHub's slugs). Prints each broken link and exits 1 if there is any."""
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"^```.*?^```", re.S | re.M)


def slugs(path):
    """The anchors GitHub makes for a Markdown file's headings."""
    text = CODE.sub("", open(path, encoding="utf-8").read())
    found = set()
    for heading in re.findall(r"^#+ (.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def main():
    pages = ["README.md", "CONTRIBUTING.md"] + sorted(glob.glob("docs/guide/*.md", root_dir=ROOT))
    broken = []
    for page in pages:
        path = os.path.join(ROOT, page)
        text = CODE.sub("", open(path, encoding="utf-8").read())
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue  # a URL, not a file of the repository
            file, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                broken.append(f"{page}: {target}: no such file")
            elif fragment and dest.endswith(".md") and fragment not in slugs(dest):
                broken.append(f"{page}: {target}: no such heading")
    for line in broken:
        print(line)
    print(f"check-doc-links: {len(pages)} pages, {len(broken)} broken link(s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
