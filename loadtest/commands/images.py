"""`loadtest images`: the container images the local cluster's real node runs, built here under the chart's own
references (see loadtest.generate.images: what each keeps of the official image, and what cannot be built)."""
from __future__ import annotations

from ..errors import UsageError
from ..generate.images import IMAGES
from ..runtime import images as builder


def cmd_build(args) -> int:
    unknown = sorted(set(args.names) - set(IMAGES))
    if unknown:
        raise UsageError(f"no image {', '.join(unknown)}: choose from {', '.join(IMAGES)}")
    builder.build(args.names or None, say=lambda line: print(line, flush=True))
    return 0


def cmd_list(args) -> int:
    for image in IMAGES.values():
        archive = builder.archive_path(image) if args.built else None
        state = "" if archive is None else ("  built" if archive.exists() else "  not built")
        contract = image.contract
        print(f"{image.name:<20} {image.reference:<60} user {contract.user}, "
              f"entrypoint {' '.join(contract.entrypoint)}{state}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("images", help="build the real node's images (never pulled) under the chart's references",
                       description=__doc__)
    actions = p.add_subparsers(dest="action", required=True, metavar="action")
    a = actions.add_parser("build", help="build the images not yet built (cached by content)")
    a.add_argument("names", nargs="*", metavar="NAME", help=f"only these ({', '.join(IMAGES)}); default all")
    a.set_defaults(func=cmd_build)
    a = actions.add_parser("list", help="each image's reference and contract")
    a.add_argument("--built", action="store_true", help="also say whether each is built")
    a.set_defaults(func=cmd_list)
