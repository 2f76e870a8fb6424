"""atomic_dir.py - a directory updated the way the kubelet updates a ConfigMap/Secret volume.

Shared by the integration, abuse, soak and valgrind tests: the server's policy and
certificate reloads must see exactly what a real mounted volume shows them.
"""
import os
import shutil


class AtomicDir:
    """Publishes file sets into `path` exactly as the kubelet's AtomicWriter does for a
    ConfigMap/Secret volume: path/..2026_<n>/<files>, path/..data -> ..2026_<n>,
    path/<name> -> ..data/<name>, and a new version is made visible by renaming a temporary
    symlink over ..data (one atomic rename), after which the old version dir is removed."""

    def __init__(self, path):
        self.path = path
        self.gen = 0
        os.makedirs(path, exist_ok=True)

    def publish(self, files):
        """files: {name: bytes}. Names must not start with '.'."""
        self.gen += 1
        ts = "..2026_11_30_%06d.%d" % (self.gen, os.getpid())
        vdir = os.path.join(self.path, ts)
        os.mkdir(vdir)
        for name, data in files.items():
            with open(os.path.join(vdir, name), "wb") as f:
                f.write(data)
        data_link = os.path.join(self.path, "..data")
        old = os.readlink(data_link) if os.path.islink(data_link) else None
        tmp = os.path.join(self.path, "..data_tmp")
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(ts, tmp)
        os.rename(tmp, data_link)
        # user-visible names: create missing ones, drop ones no longer published
        for name in files:
            link = os.path.join(self.path, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join("..data", name), link)
        for name in os.listdir(self.path):
            if name.startswith("."):
                continue
            if name not in files and os.path.islink(os.path.join(self.path, name)):
                os.unlink(os.path.join(self.path, name))
        if old and old != ts:
            shutil.rmtree(os.path.join(self.path, old), ignore_errors=True)
