//! Cluster and tenant facts from a Lieutenant-style object (a file or the
//! Lieutenant API's `clusters/<id>` and `tenants/<id>` responses), the
//! required-facts check and `params/cluster.yml` as Commodore renders it.

use super::{commodore_yaml, map, s, CommodoreError};
use crate::value::{Map, Value};
use std::path::Path;

/// The cluster and tenant objects, as Lieutenant returns them.
#[derive(Debug, Clone)]
pub struct ClusterInfo {
    pub cluster: Map,
    pub tenant: Map,
}

fn field<'a>(m: &'a Map, path: &[&str]) -> Option<&'a Value> {
    let mut cur = m.get(path[0])?;
    for p in &path[1..] {
        cur = cur.get_path(&[p])?;
    }
    Some(cur)
}

fn string(m: &Map, path: &[&str], what: &str) -> Result<String, CommodoreError> {
    match field(m, path) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(CommodoreError::new(format!(
            "{what} `{}` is missing",
            path.join(".")
        ))),
    }
}

impl ClusterInfo {
    /// From the two API responses; the cluster's `tenant` must name the
    /// tenant.
    pub fn new(cluster: Map, tenant: Map) -> Result<Self, CommodoreError> {
        let ct = cluster.get("tenant").and_then(Value::as_str);
        let tid = tenant.get("id").and_then(Value::as_str);
        if ct.is_none() || ct != tid {
            return Err(CommodoreError::new("Tenant ID mismatch")
                .hint("the cluster's `tenant` must be the tenant's `id`"));
        }
        Ok(ClusterInfo { cluster, tenant })
    }

    /// Reads a JSON or YAML file holding `{cluster: {...}, tenant: {...}}`,
    /// or a cluster object whose `tenant` is the tenant object.
    pub fn load(path: &Path) -> Result<Self, CommodoreError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CommodoreError::new(format!("{}: {e}", path.display())).file(path))?;
        let v = crate::compile::pyyaml_load::load(&text)
            .map_err(|e| CommodoreError::new(format!("{}: {e}", path.display())).file(path))?;
        let Value::Map(top) = v else {
            return Err(CommodoreError::new("the cluster file must hold a mapping").file(path));
        };
        let r = match (top.get("cluster"), top.get("tenant")) {
            (Some(Value::Map(c)), Some(Value::Map(t))) => Self::new(c.clone(), t.clone()),
            (_, Some(Value::Map(t))) => {
                let mut c = top.clone();
                let id = t.get("id").cloned().unwrap_or(Value::Null);
                c.insert("tenant".into(), id);
                Self::new(c, t.clone())
            }
            _ => Err(CommodoreError::new(
                "the cluster file needs the tenant object: `{cluster: {...}, tenant: {...}}` or a cluster whose `tenant` is the tenant object",
            )),
        };
        r.map_err(|e| e.file(path))
    }

    pub fn id(&self) -> Result<String, CommodoreError> {
        string(&self.cluster, &["id"], "cluster")
    }

    /// `params/cluster.yml`'s content (Commodore's `render_params`).
    pub fn render_params(&self) -> Result<Value, CommodoreError> {
        let facts = self
            .cluster
            .get("facts")
            .cloned()
            .unwrap_or(Value::Map(Map::default()));
        for fact in ["distribution", "cloud"] {
            let set = match facts.get_path(&[fact]) {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Bool(b)) => *b,
                Some(Value::Map(m)) => !m.is_empty(),
                Some(Value::List(l)) => !l.is_empty(),
                Some(Value::Int(i)) => *i != 0,
                Some(Value::Float(f)) => *f != 0.0,
            };
            if !set {
                return Err(
                    CommodoreError::new(format!("Required fact '{fact}' not set"))
                        .hint(format!("set facts.{fact} on the cluster")),
                );
            }
        }
        let dynfacts = self
            .cluster
            .get("dynamicFacts")
            .cloned()
            .unwrap_or(Value::Map(Map::default()));
        let catalog_url = string(&self.cluster, &["gitRepo", "url"], "cluster").map_err(|_| {
            CommodoreError::new(format!(
                " > API did not return a repository URL for cluster '{}'",
                self.id().unwrap_or_default()
            ))
        })?;
        Ok(map(vec![(
            "parameters",
            map(vec![
                (
                    super::BOOTSTRAP,
                    map(vec![
                        ("name", s(&self.id()?)),
                        (
                            "display_name",
                            s(&string(&self.cluster, &["displayName"], "cluster")?),
                        ),
                        ("catalog_url", s(&catalog_url)),
                        ("tenant", s(&string(&self.tenant, &["id"], "tenant")?)),
                        (
                            "tenant_display_name",
                            s(&string(&self.tenant, &["displayName"], "tenant")?),
                        ),
                    ]),
                ),
                ("facts", facts),
                ("dynamic_facts", dynfacts),
            ]),
        )]))
    }

    /// The tenant's id (the directory of the tenant configuration).
    pub fn tenant_id(&self) -> Result<String, CommodoreError> {
        string(&self.tenant, &["id"], "tenant")
    }

    /// The global configuration repository (`globalGitRepoURL` of the tenant).
    pub fn global_git_repo_url(&self) -> Result<String, CommodoreError> {
        string(&self.tenant, &["globalGitRepoURL"], "tenant").map_err(|_| {
            CommodoreError::new(format!(
                "URL of the global git repository is missing on tenant '{}'",
                self.tenant_id().unwrap_or_default()
            ))
        })
    }

    /// The tenant configuration repository (`gitRepo.url` of the tenant).
    pub fn config_repo_url(&self) -> Result<String, CommodoreError> {
        string(&self.tenant, &["gitRepo", "url"], "tenant").map_err(|_| {
            CommodoreError::new(format!(
                " > API did not return a repository URL for tenant '{}'",
                self.tenant_id().unwrap_or_default()
            ))
        })
    }

    /// A field of the cluster, else of the tenant (Commodore's
    /// `_extract_field`): revisions can be set on either.
    fn revision(&self, field: &str) -> Option<String> {
        self.cluster
            .get(field)
            .or_else(|| self.tenant.get(field))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    /// `globalGitRepoRevision` of the cluster or the tenant.
    pub fn global_git_repo_revision(&self) -> Option<String> {
        self.revision("globalGitRepoRevision")
    }

    /// `tenantGitRepoRevision` of the cluster or the tenant.
    pub fn config_git_repo_revision(&self) -> Option<String> {
        self.revision("tenantGitRepoRevision")
    }

    /// Writes `inventory/classes/params/cluster.yml`.
    pub fn write_params(&self, layout: &super::Layout) -> Result<(), CommodoreError> {
        let v = self.render_params()?;
        super::write(&layout.params_file(), &commodore_yaml(&[v]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(facts: Value) -> ClusterInfo {
        let c = map(vec![
            ("id", s("c-a")),
            ("displayName", s("A")),
            ("tenant", s("t-x")),
            ("facts", facts),
            ("gitRepo", map(vec![("url", s("ssh://git@h/c.git"))])),
        ]);
        let t = map(vec![("id", s("t-x")), ("displayName", s("X"))]);
        let (Value::Map(c), Value::Map(t)) = (c, t) else {
            unreachable!()
        };
        ClusterInfo::new(c, t).unwrap()
    }

    #[test]
    fn required_facts() {
        let e = info(map(vec![("cloud", s("x"))]))
            .render_params()
            .unwrap_err();
        assert_eq!(e.message, "Required fact 'distribution' not set");
        let e = info(map(vec![("cloud", s("")), ("distribution", s("k3s"))]))
            .render_params()
            .unwrap_err();
        assert_eq!(e.message, "Required fact 'cloud' not set");
        let text = commodore_yaml(
            &[info(map(vec![("cloud", s("c")), ("distribution", s("d"))]))
                .render_params()
                .unwrap()],
        );
        assert!(
            text.starts_with("parameters:\n  cluster:\n    catalog_url: ssh://git@h/c.git\n"),
            "{text}"
        );
        assert!(text.contains("  dynamic_facts: {}\n"), "{text}");
    }
}
