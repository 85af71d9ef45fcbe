"""The cluster's certificates and the kubeconfig that carries them.

One CA signs everything; clients authenticate with certificates only (no tokens): the admin as cluster admin, the
real node's kubelet and kube-proxy as themselves.
"""
from __future__ import annotations

import base64
import json
import ssl
import subprocess
from pathlib import Path


KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
LEAF = "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\n"


def _openssl(pki: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True)


def issue(pki: Path, name: str, subject: dict[str, str], extensions: str) -> None:
    """<name>.crt and <name>.key in `pki`, signed by its CA; `extensions` adds to a leaf's basic constraints."""
    dn = "\n".join(f"{k} = {v}" for k, v in subject.items())
    (pki / f"{name}.cnf").write_text(f"[req]\nprompt = no\ndistinguished_name = dn\n[dn]\n{dn}\n[ext]\n"
                                     f"{LEAF}{extensions}\n")
    _openssl(pki, "req", "-x509", *KEY, "-CA", "ca.crt", "-CAkey", "ca.key", "-keyout", f"{name}.key",
             "-out", f"{name}.crt", "-days", "3650", "-extensions", "ext", "-config", f"{name}.cnf")


def make_certificates(pki: Path, service_ip: str, address: str) -> None:
    """A CA, the apiserver's serving cert for its `address`, 127.0.0.1 and the `kubernetes` Service at `service_ip`
    (the first address of the Service range), an admin client cert (system:masters), a token signing key."""
    (pki / "ca.cnf").write_text("[req]\nprompt = no\ndistinguished_name = dn\n[dn]\nCN = loadtest-local-ca\n[ext]\n"
                                "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n")
    _openssl(pki, "req", "-x509", *KEY, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-extensions", "ext",
             "-config", "ca.cnf")
    issue(pki, "apiserver", {"CN": "kube-apiserver"},
          "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1, DNS:localhost, DNS:kubernetes, "
          f"DNS:kubernetes.default.svc, IP:{service_ip}, IP:{address}")
    issue(pki, "admin", {"O": "system:masters", "CN": "admin"}, "extendedKeyUsage = clientAuth")
    _openssl(pki, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "service-account.key")
    _openssl(pki, "pkey", "-in", "service-account.key", "-pubout", "-out", "service-account.pub")


def admin_context(pki: Path) -> ssl.SSLContext:
    """TLS as cluster admin: trusts the cluster's CA, presents the admin client certificate."""
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
    return context


def write_kubeconfig(kubeconfig: Path, server: str, pki: Path, user: str = "admin") -> None:
    """A kubeconfig for `server` as `user` (the client certificate <user>.crt), with the certificates inline (it
    stays valid if the pki dir moves)."""
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "loadtest-local",
        "clusters": [{"name": "loadtest-local",
                      "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": user,
                   "user": {"client-certificate-data": b64(f"{user}.crt"), "client-key-data": b64(f"{user}.key")}}],
        "contexts": [{"name": "loadtest-local", "context": {"cluster": "loadtest-local", "user": user}}],
    }
    kubeconfig.write_text(json.dumps(config, indent=2))
    kubeconfig.chmod(0o600)
