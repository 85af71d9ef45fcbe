"""Files loadtest writes and commits, and what they are made from: values files and schema enums, the dashboards, the
chart's README and version record, CRD schemas and the real node's images. Pure core: no processes."""
