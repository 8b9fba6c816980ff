//! Nothing but tests (in `tests/`): the deployment files that ship with ccbench —
//! `deploy/kubernetes/sweep-job.yaml`, `deploy/slurm/sweep.sbatch` and the `Containerfile` —
//! checked so that a typo fails a test instead of a cluster. A crate of its own so that the
//! Kubernetes API types are compiled only for these tests, never for ccbench itself.
