//! kapp-style apply ordering of Kubernetes resources.
