//! Resolving a `PackageInstall` to one `Package`, as kapp-controller's
//! `referencedPkgVersion` and its downgrade guard do: candidates are the
//! versions of the packages with the install's `refName`, a constraint that
//! is a single prerelease version enables prereleases, the packages'
//! kubernetes / kapp-controller constraints are checked against the
//! cluster's versions, the highest survivor wins, and a selection lower than
//! `status.lastAttemptedVersion` stops unless the install is downgradable.

use super::constraint::Constraint;
use super::model::{Package, PackageInstall, ANN_DOWNGRADABLE, ANN_IGNORE_K8S, ANN_IGNORE_KC};
use super::select::{self, Check, SelectError, Selection};
use super::version::Version;
use std::collections::HashMap;

/// The versions of the cluster an install targets (from the inventory's
/// `parameters.kubernetes_version` / facts, or `--env`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterVersions {
    pub kubernetes: Option<String>,
    pub kapp_controller: Option<String>,
}

/// A resolved install.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub install: String,
    pub ref_name: String,
    pub version: String,
    pub package: Package,
    /// Every candidate that lost, with the reason.
    pub rejected: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    #[error("Package {0} not found")]
    NotFound(String),
    #[error("{0}")]
    Select(#[from] SelectError),
    #[error("Could not find package with name '{ref_name}' and version '{version}'")]
    Missing { ref_name: String, version: String },
    #[error("Filtering by last attempted version '{last}': {message}")]
    LastAttempted { last: String, message: String },
    #[error("Stopped installing matched version '{selected}' since last attempted version '{last}' is higher.")]
    Downgrade { selected: String, last: String },
}

impl InstallError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            InstallError::NotFound(r) => Some(format!(
                "no repository offers a Package with refName `{r}`: add the repository, or check the spelling"
            )),
            InstallError::Downgrade { .. } => Some(
                "Add annotation packaging.carvel.dev/downgradable: \"\" to PackageInstall to proceed with downgrade".into(),
            ),
            InstallError::Select(SelectError::NoneFound { .. }) => Some(
                "widen spec.packageRef.versionSelection, or check the cluster versions (--env, parameters.kubernetes_version)".into(),
            ),
            InstallError::Select(SelectError::Constraint { .. }) => Some(
                "constraints use vendir's grammar: space = AND, ` || ` = OR, `x` wildcards, no `v`, `^`, `~`, `*` or `,` (e.g. '>=1.2.0 <2.0.0')".into(),
            ),
            _ => None,
        }
    }
}

/// kapp-controller's global packaging namespace: visible from every namespace.
pub const GLOBAL_NAMESPACE: &str = "kapp-controller-packaging-global";

fn visible(pkg: &Package, install: &PackageInstall) -> bool {
    match (&pkg.meta.namespace, &install.meta.namespace) {
        (Some(p), Some(i)) => p == i || p == GLOBAL_NAMESPACE,
        _ => true,
    }
}

/// Checks a package's own constraint against one cluster component.
fn component_check(
    constraint: Option<&str>,
    ignored: bool,
    cluster: Option<&str>,
    what: &str,
) -> Result<(), String> {
    let Some(constraint) = constraint else {
        return Ok(());
    };
    if ignored {
        return Ok(());
    }
    let Some(raw) = cluster else {
        return Err(format!(
            "needs {what} '{constraint}' but the {what} is unknown (set it in the inventory or with --env)"
        ));
    };
    let cluster_v = Version::parse_tolerant(raw)
        .map_err(|e| format!("{what} '{raw}' is not a version: {e}"))?
        .finalized();
    let c = Constraint::parse(constraint)
        .map_err(|e| format!("invalid {what} constraint '{constraint}': {e}"))?;
    if c.matches(&cluster_v) {
        Ok(())
    } else {
        Err(format!(
            "needs {what} '{constraint}', cluster has {cluster_v}"
        ))
    }
}

/// Resolves one install against the packages on offer.
pub fn resolve_install(
    install: &PackageInstall,
    packages: &[Package],
    cluster: &ClusterVersions,
) -> Result<Resolution, InstallError> {
    let in_ns: Vec<&Package> = packages.iter().filter(|p| visible(p, install)).collect();
    if in_ns.is_empty() {
        return Err(InstallError::NotFound(install.ref_name.clone()));
    }
    let mut versions = Vec::new();
    let mut by_version: HashMap<&str, &Package> = HashMap::new();
    for p in in_ns.iter().filter(|p| p.ref_name == install.ref_name) {
        versions.push(p.version.clone());
        by_version.insert(p.version.as_str(), p);
    }

    let mut selection = install.selection.clone();
    if !selection.constraints.is_empty() && selection.prereleases.is_none() {
        if let Ok(v) = Version::parse(&selection.constraints) {
            if v.has_prerelease() {
                selection.prereleases = Some(Vec::new());
            }
        }
    }

    let ann = &install.meta.annotations;
    let ignore_k8s = ann.contains_key(ANN_IGNORE_K8S);
    let ignore_kc = ann.contains_key(ANN_IGNORE_KC);
    let mut checks = Vec::new();
    if by_version
        .values()
        .any(|p| p.kubernetes_constraints.is_some())
    {
        checks.push(Check {
            name: "kubernetes-version-check",
            keep: Box::new(|v: &str| {
                let p = by_version.get(v).copied();
                component_check(
                    p.and_then(|p| p.kubernetes_constraints.as_deref()),
                    ignore_k8s,
                    cluster.kubernetes.as_deref(),
                    "kubernetes version",
                )
            }),
        });
    }
    checks.push(Check {
        name: "kapp-controller-version-check",
        keep: Box::new(|v: &str| {
            let p = by_version.get(v).copied();
            component_check(
                p.and_then(|p| p.kapp_controller_constraints.as_deref()),
                ignore_kc,
                cluster.kapp_controller.as_deref(),
                "kapp-controller version",
            )
        }),
    });

    let Selection {
        selected, rejected, ..
    } = select::highest(&versions, &selection, &checks)?;
    drop(checks);
    let package = by_version
        .get(selected.as_str())
        .map(|p| (*p).clone())
        .ok_or_else(|| InstallError::Missing {
            ref_name: install.ref_name.clone(),
            version: selected.clone(),
        })?;

    if let Some(last) = &install.last_attempted_version {
        if !ann.contains_key(ANN_DOWNGRADABLE) {
            let con = Constraint::parse(&format!(">={last}")).map_err(|e| {
                InstallError::LastAttempted {
                    last: last.clone(),
                    message: e.0,
                }
            })?;
            let ok = Version::parse_relaxed(&package.version).is_ok_and(|v| con.matches(&v));
            if !ok {
                return Err(InstallError::Downgrade {
                    selected: package.version.clone(),
                    last: last.clone(),
                });
            }
        }
    }

    Ok(Resolution {
        install: install.meta.name.clone(),
        ref_name: install.ref_name.clone(),
        version: package.version.clone(),
        package,
        rejected,
    })
}

/// Resolves every install; the entry point for `strata compile`
/// (`parameters.packages_install` and `PackageInstall` documents of a
/// target's output). Results keep the installs' order.
pub fn resolve_installs(
    installs: &[PackageInstall],
    packages: &[Package],
    cluster: &ClusterVersions,
) -> Vec<Result<Resolution, InstallError>> {
    installs
        .iter()
        .map(|i| resolve_install(i, packages, cluster))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::model::{parse_stream, Resource, Strictness};
    use std::path::Path;

    fn load(text: &str) -> (Vec<Package>, Vec<PackageInstall>) {
        let docs = crate::yaml::load_all(text).unwrap();
        let (res, _) = parse_stream(Path::new("t"), &docs, Strictness::Strict, false).unwrap();
        let mut p = Vec::new();
        let mut i = Vec::new();
        for r in res {
            match r {
                Resource::Package(x) => p.push(x),
                Resource::PackageInstall(x) => i.push(x),
                _ => {}
            }
        }
        (p, i)
    }

    fn pkg(version: &str, extra: &str) -> String {
        format!(
            "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: app.example.com.{version}\nspec:\n  refName: app.example.com\n  version: {version}\n{extra}---\n"
        )
    }

    fn install(constraints: &str, extra: &str) -> String {
        format!(
            "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageInstall\nmetadata:\n  name: app\n{extra}spec:\n  packageRef:\n    refName: app.example.com\n    versionSelection:\n      constraints: '{constraints}'\n"
        )
    }

    #[test]
    fn picks_highest_and_explains_the_rest() {
        let text =
            pkg("1.0.0", "") + &pkg("1.1.0", "") + &pkg("2.0.0-rc.1", "") + &install(">=1.0.0", "");
        let (p, i) = load(&text);
        let r = resolve_install(&i[0], &p, &ClusterVersions::default()).unwrap();
        assert_eq!(r.version, "1.1.0");
        assert!(r
            .rejected
            .iter()
            .any(|(v, why)| v == "1.0.0" && why.contains("lower")));
        assert!(r
            .rejected
            .iter()
            .any(|(v, why)| v == "2.0.0-rc.1" && why.contains("prerelease")));
    }

    #[test]
    fn kubernetes_version_unknown_is_explained() {
        let text = pkg(
            "1.0.0",
            "  kubernetesVersionSelection:\n    constraints: '>=1.25.0'\n",
        ) + &install(">=1.0.0", "");
        let (p, i) = load(&text);
        let e = resolve_install(&i[0], &p, &ClusterVersions::default()).unwrap_err();
        let InstallError::Select(SelectError::NoneFound { details, rejected }) = &e else {
            panic!("{e}")
        };
        assert!(details.contains("after-kubernetes-version-check=0"));
        assert!(rejected[0].1.contains("unknown"), "{rejected:?}");
        let cluster = ClusterVersions {
            kubernetes: Some("v1.29.2+k3s1".into()),
            kapp_controller: None,
        };
        assert_eq!(
            resolve_install(&i[0], &p, &cluster).unwrap().version,
            "1.0.0"
        );
    }

    #[test]
    fn resolve_installs_keeps_order() {
        let text = pkg("1.0.0", "") + &install("1.0.0", "") + "---\n" + &install("9.0.0", "");
        let (p, i) = load(&text);
        let r = resolve_installs(&i, &p, &ClusterVersions::default());
        assert_eq!(r[0].as_ref().unwrap().version, "1.0.0");
        assert!(r[1].is_err());
    }
}
