"""Requirement texts and whether they are pinned with their hashes: the CLI (loadtest.workload.usertest) and the chart
(locust.packages.requirements) must answer the same, so the unit and the chart layer both run this table."""

HASH = "--hash=sha256:" + "0" * 64

# requirement text -> accepted (the chart checks locust.packages.requirements with the same pattern and these cases)
REQUIREMENTS = {
    f"pyjwt==2.10.1 {HASH}": True,
    f"pyjwt==2.10.1 \\\n    {HASH} \\\n    {HASH.replace('0', '1')}": True,
    f"Flask[async]==3.1.0 {HASH}  # the web client": True,
    f'tomli==2.2.1 ; python_version < "3.11" {HASH}': True,
    f"# a comment\n\npyjwt==2.10.1 {HASH}\n": True,
    "pyjwt==2.10.1": False,  # no hash
    f"pyjwt>=2 {HASH}": False,  # not an exact pin
    f"pyjwt {HASH}": False,
    f"--index-url https://example.com/simple\npyjwt==2.10.1 {HASH}": False,
    f"pyjwt==2.10.1 --hash=md5:{'0' * 32}": False,
}
