//! The semantic mode's walk over parsed values: Secret kinds (and where in
//! an object values are hidden by position), maps of secrets, name/value
//! pairs, Alertmanager receivers, and the helpers that put a placeholder in
//! place of a hidden value.

use crate::value::{Map, Value};
use regex::Regex;
use std::collections::HashSet;

use super::commands::{
    command_programs, command_secret_flag, glued_password, list_password_items, user_password_flag,
    with_registry_login, PASSWORD_CLIENTS,
};
use super::escapes::decode_escapes;
use super::iac::secure_parameter_type;
use super::keys::{jwk_private, last_word};
use super::shapes::url_passwords_pair;
use super::{
    replace_in, Redactor, ALIASED_UNDER_SECRET, CHANGED, LAST_APPLIED, OLD, REFERENCE_WORDS,
    UNCHANGED,
};

/// Keys holding a list of Secret names (a ServiceAccount's `secrets`, a pod's
/// `imagePullSecrets`): `secret` and a plural `s`, which in `DB_SECRETS` or
/// `DB_PASSWORDS` hides a value. Holding a map instead (Helm charts'
/// `secrets: {NAME: value}`, which the chart writes into a Secret), the
/// key is read as a secret word again: [`names_a_secret_value`].
const SECRET_NAME_LISTS: &[&str] = &["secrets", "imagepullsecrets", "pullsecrets"];

/// Alertmanager's receiver lists whose items hold a secret under a neutral
/// key ([`receiver_key`]).
const SECRET_RECEIVERS: &[&str] = &["pagerduty_configs", "pushover_configs"];

/// A key that Alertmanager documents as `<secret>` in an item of
/// [`SECRET_RECEIVERS`]: PagerDuty's `routing_key` and `service_key`,
/// Pushover's `user_key` (its `token` is a secret word already). Elsewhere
/// an AMQP `routing_key` is ordinary configuration, so these count only in
/// a text naming one of the receiver lists, or in the items of one.
pub(super) fn receiver_key(key: &str) -> bool {
    ["routing_key", "service_key", "user_key"]
        .iter()
        .any(|k| key.eq_ignore_ascii_case(k))
}

/// The field of a name/value pair that names it (`{name: DB_PASSWORD,
/// value: x}`, Envoy's `{key: Authorization, …}`, `header`), any case:
/// also ECS's `Name`/`Value` and CloudFormation parameter files'
/// `ParameterKey`/`ParameterValue`.
/// Keycloak's credentials, `{type: password, value: x}`, are named by
/// their `type`; probe35: the AWX operator's `extra_settings`, `{setting:
/// AUTH_LDAP_BIND_PASSWORD, value: x}`, by their `setting`.
pub(super) fn pair_name_field(k: &str) -> bool {
    ["name", "key", "header", "parameterkey", "type", "setting"]
        .iter()
        .any(|f| k.eq_ignore_ascii_case(f))
}

/// The field of a name/value pair that holds the value ([`pair_name_field`]);
/// `default` too (Tekton and Argo params).
pub(super) fn pair_value_field(k: &str) -> bool {
    ["value", "default", "parametervalue", "defaultvalue"]
        .iter()
        .any(|f| k.eq_ignore_ascii_case(f))
}

/// Whether a text configures one of [`SECRET_RECEIVERS`].
pub(super) fn names_receivers(text: &str) -> bool {
    SECRET_RECEIVERS.iter().any(|r| text.contains(r))
}

/// Kapitan's reference backends: `parameters.kapitan.secrets` is a map of
/// their settings (`gpg: {recipients}`, `vaultkv: {addr, auth, mount}`),
/// not of values, and stays visible.
pub(super) const KAPITAN_SECRET_BACKENDS: &[&str] =
    &["gpg", "gkms", "awskms", "azkms", "vaultkv", "vaulttransit"];

/// Whether a map under `secrets` is Kapitan's backend settings: a key
/// names one of [`KAPITAN_SECRET_BACKENDS`].
fn holds_backends(v: Option<&Value>) -> bool {
    v.and_then(Value::as_map).is_some_and(|m| {
        m.keys()
            .any(|k| KAPITAN_SECRET_BACKENDS.contains(&k.as_str()))
    })
}

/// One of [`SECRET_NAME_LISTS`].
pub(super) fn is_name_list_key(key: &str) -> bool {
    SECRET_NAME_LISTS
        .iter()
        .any(|k| key.eq_ignore_ascii_case(k))
}

/// Whether a key inside a map under `secrets` (or `pullSecrets`) holds a
/// value rather than naming or pointing at one: every key but those whose
/// last word is one of [`REFERENCE_WORDS`] (`secrets: {name: db,
/// mountPath: /s}` stays, as `secretName` and `secretMountPath` do).
pub(super) fn names_a_secret_value(key: &str) -> bool {
    last_word(key).is_none_or(|w| !REFERENCE_WORDS.iter().any(|r| w.eq_ignore_ascii_case(r)))
}

/// A JSON patch's `path` into a Secret's data (`/data/conn`,
/// `/stringData/conn`): the op's `value` is the secret (re-probe 18).
pub(super) fn secret_patch_path(path: &str) -> bool {
    path.starts_with("/data/") || path.starts_with("/stringData/")
}

impl Redactor {
    pub(super) fn walk(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        match (old, new) {
            (Some(Value::Map(o)), Some(Value::Map(n))) => {
                let (a, b) = self.walk_maps(Some(o), Some(n), Part::of(o).or(Part::of(n)));
                (Some(Value::Map(a)), Some(Value::Map(b)))
            }
            (Some(Value::Map(o)), None) => (
                Some(Value::Map(self.walk_maps(Some(o), None, Part::of(o)).0)),
                None,
            ),
            (None, Some(Value::Map(n))) => (
                None,
                Some(Value::Map(self.walk_maps(None, Some(n), Part::of(n)).1)),
            ),
            (Some(Value::List(o)), Some(Value::List(n))) => {
                let (a, b) = self.walk_list(o, n, &[]);
                (Some(Value::List(a)), Some(Value::List(b)))
            }
            (Some(Value::List(o)), None) => {
                let (a, _) = self.walk(
                    Some(&Value::List(o.clone())),
                    Some(&Value::List(Vec::new())),
                );
                (a, None)
            }
            (None, Some(Value::List(n))) => {
                let (_, b) = self.walk(
                    Some(&Value::List(Vec::new())),
                    Some(&Value::List(n.clone())),
                );
                (None, b)
            }
            // A value one side aliases under a secret key is hidden on the
            // other side too: a pull request that starts using a value as
            // a password must not show it as the old version.
            (Some(o), Some(n))
                if !is_container(o)
                    && !is_container(n)
                    && [o, n]
                        .iter()
                        .any(|v| v.as_str() == Some(ALIASED_UNDER_SECRET)) =>
            {
                let hidden = Value::String(ALIASED_UNDER_SECRET.into());
                (Some(hidden.clone()), Some(hidden))
            }
            // Different shapes: walk each side alone.
            (Some(o), Some(n)) if is_container(o) || is_container(n) => {
                (self.walk(Some(o), None).0, self.walk(None, Some(n)).1)
            }
            (Some(Value::String(o)), Some(Value::String(n)))
                if self.looks_like_secret(o) || self.looks_like_secret(n) =>
            {
                // A Secret manifest carried as text (a ClusterResourceSet's
                // ConfigMap, inline Helm values, a JSON string): withheld
                // whole, as text mode withholds such a file.
                hide_always(old, new)
            }
            (Some(Value::String(o)), Some(Value::String(n))) => {
                let (a, b) = url_passwords_pair(o, n);
                let (a, b) = self.scrub_pair(Some(&a), Some(&b));
                let b = b.map(|b| note_changed_refs(o, n, b));
                (a.map(Value::String), b.map(Value::String))
            }
            (Some(Value::String(o)), None) if self.looks_like_secret(o) => hide_always(old, None),
            (None, Some(Value::String(n))) if self.looks_like_secret(n) => hide_always(None, new),
            (Some(Value::String(o)), None) => (Some(Value::String(self.scrub_value(o))), None),
            (None, Some(Value::String(n))) => (None, Some(Value::String(self.scrub_value(n)))),

            (o, n) => (o.cloned(), n.cloned()),
        }
    }

    /// [`Self::walk`] of two lists. `programs` are run by a sibling
    /// `command` list, whose flags these args may be.
    fn walk_list(&self, o: &[Value], n: &[Value], programs: &[&str]) -> (Vec<Value>, Vec<Value>) {
        let len = o.len().max(n.len());
        let mut a = Vec::with_capacity(o.len());
        let mut b = Vec::with_capacity(n.len());
        for i in 0..len {
            let (x, y) = self.walk(o.get(i), n.get(i));
            a.extend(x);
            b.extend(y);
        }
        // `args: [--password, VALUE]`: the item after a secret flag;
        // `[redis-cli, -a, VALUE]`: after a flag of the program run.
        let mut programs = programs.to_vec();
        for p in command_programs(o.iter().chain(n).filter_map(Value::as_str)) {
            if !programs.contains(&p) {
                programs.push(p);
            }
        }
        let programs = with_registry_login(programs, [o, n]);
        let command_flag = |l: &[Value], i: usize| {
            l.get(i - 1).and_then(Value::as_str).is_some_and(|f| {
                programs.iter().any(|p| command_secret_flag(p, f))
                    || (f.starts_with('-')
                        && l.get(i)
                            .and_then(Value::as_str)
                            .is_some_and(|v| self.auth_value(f.trim_start_matches('-'), v)))
                    || l.get(i)
                        .and_then(Value::as_str)
                        .is_some_and(|v| user_password_flag(f, v))
            })
        };
        // `[create, secret, generic, s, --from-literal, k=v]`: a Secret's
        // data whatever its key (a ConfigMap's literals are shown).
        let creates_secret = [o, n]
            .iter()
            .any(|l| l.iter().any(|x| x.as_str() == Some("secret")));
        let literal = |l: &[Value], i: usize| {
            creates_secret
                && (l
                    .get(i)
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.starts_with("--from-literal="))
                    || (i > 0 && l.get(i - 1).and_then(Value::as_str) == Some("--from-literal")))
        };
        // `[mysql, -pX]`, `[7z, a, -pX]`: a password glued to its option.
        let glued = |l: &[Value], i: usize| {
            l.get(i)
                .and_then(Value::as_str)
                .is_some_and(|s| programs.iter().any(|p| glued_password(p, s)))
        };
        // `[rabbitmqctl, change_password, USER, X]`: a password by its
        // place after the client (red38).
        let positional = |l: &[Value]| {
            let items: Vec<&str> = l.iter().map(|v| v.as_str().unwrap_or("")).collect();
            list_password_items(&items, &programs)
        };
        let (po, pn) = if self.defaults && programs.iter().any(|p| PASSWORD_CLIENTS.contains(p)) {
            (positional(o), positional(n))
        } else {
            (Vec::new(), Vec::new())
        };
        for i in 0..len {
            let placed = po.iter().chain(&pn).any(|&(w, _)| w == i);
            let after_flag = placed
                || (i > 0
                    && (self.is_secret_flag(o.get(i - 1))
                        || self.is_secret_flag(n.get(i - 1))
                        || command_flag(o, i)
                        || command_flag(n, i)));
            if after_flag || literal(o, i) || literal(n, i) || glued(o, i) || glued(n, i) {
                let (x, y) = hide(o.get(i), n.get(i));
                if let (Some(x), Some(slot)) = (x, a.get_mut(i)) {
                    *slot = x;
                }
                if let (Some(y), Some(slot)) = (y, b.get_mut(i)) {
                    *slot = y;
                }
            }
        }
        self.hide_helm_parameter_items(o, n, &mut a, &mut b);
        (a, b)
    }

    /// [`Self::walk`] of a map that is `part` of a secret-bearing object
    /// because of where it sits, not of its own `kind`.
    fn walk_part(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
        part: Part,
    ) -> (Option<Value>, Option<Value>) {
        match (old, new) {
            (Some(Value::Map(_)) | None, Some(Value::Map(_)) | None)
                if old.is_some() || new.is_some() =>
            {
                let (a, b) = self.walk_maps(
                    old.and_then(Value::as_map),
                    new.and_then(Value::as_map),
                    part,
                );
                (old.map(|_| Value::Map(a)), new.map(|_| Value::Map(b)))
            }
            _ => self.walk(old, new),
        }
    }

    fn walk_maps(&self, old: Option<&Map>, new: Option<&Map>, part: Part) -> (Map, Map) {
        let secret = part == Part::Secret;
        let empty = Map::default();
        let o = old.unwrap_or(&empty);
        let n = new.unwrap_or(&empty);
        let mut a = Map::with_capacity_and_hasher(o.len(), Default::default());
        let mut b = Map::with_capacity_and_hasher(n.len(), Default::default());
        let mut keys: Vec<&String> = o.keys().collect();
        keys.extend(n.keys().filter(|k| !o.contains_key(*k)));
        // `{name: DB_PASSWORD, value: x}` (container env, Helm-style lists),
        // `{key: Authorization, value: x}` (Envoy header lists).
        // A pair is a small map: a larger one is looked up by the usual
        // spellings only (this runs on every map).
        let named_secret = |m: &Map| {
            let named = |(field, name): (&String, &Value)| {
                (pair_name_field(field) && name.as_str().is_some_and(|name| self.key_matches(name)))
                    || (field == "path" && name.as_str().is_some_and(secret_patch_path))
            };
            if m.len() <= 8 {
                m.iter().any(named)
            } else {
                ["name", "key", "header"].iter().any(|f| {
                    m.get(*f)
                        .and_then(Value::as_str)
                        .is_some_and(|name| self.key_matches(name))
                })
            }
        };
        // Terraform JSON (`.tf.json`): a variable or output that says
        // `sensitive: true`, an SSM parameter of `type: SecureString`.
        // CloudFormation's `NoEcho: true` and ARM's `type: secureString`
        // mark a parameter whose `Default` / `defaultValue` is its secret
        // (issue 19).
        let terraform_sensitive = |m: &Map| {
            matches!(m.get("sensitive"), Some(Value::Bool(true)))
                || m.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t == "SecureString" || secure_parameter_type(t))
                || match m.get("NoEcho") {
                    Some(Value::Bool(b)) => *b,
                    Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
                    _ => false,
                }
        };
        let env_secret = named_secret(o)
            || named_secret(n)
            || (self.defaults && (terraform_sensitive(o) || terraform_sensitive(n)));
        let jwk = self.defaults && (o.contains_key("kty") || n.contains_key("kty"));
        let sibling_programs = command_programs(
            [o.get("command"), n.get("command")]
                .into_iter()
                .flatten()
                .filter_map(|c| match c {
                    Value::List(l) => Some(l.iter().filter_map(Value::as_str)),
                    _ => None,
                })
                .flatten(),
        );
        for k in keys {
            let (ov, nv) = (o.get(k), n.get(k));
            let (x, y) = if secret && (k == "data" || k == "stringData") {
                self.hide_children(ov, nv)
            } else if let Some(child) = part.child(k) {
                self.walk_part(ov, nv, child)
            } else if let (Part::ListOf(kind), "items") = (part, k.as_str()) {
                self.walk_items(ov, nv, Part::of_kind(kind))
            } else if env_secret && pair_value_field(k) {
                // A Tekton or Argo param gives its value as `default`.
                hide(ov, nv)
            } else if self.defaults && SECRET_RECEIVERS.contains(&k.as_str()) {
                self.walk_items(ov, nv, Part::Receiver)
            } else if self.defaults && k == "set_sensitive" {
                self.walk_items(ov, nv, Part::Sensitive)
            } else if self.defaults
                && is_name_list_key(k)
                && [ov, nv]
                    .iter()
                    .flatten()
                    .any(|v| matches!(v, Value::Map(_)))
                && !holds_backends(ov)
                && !holds_backends(nv)
            {
                // `secrets: {DB_CONN: x}`: values, not a list of names.
                self.hide_values_under_secrets(ov, nv)
            } else if k == "args" && !sibling_programs.is_empty() {
                // A container's `args` after `command: [redis-cli]`.
                fn list(v: Option<&Value>) -> Option<&[Value]> {
                    match v {
                        Some(Value::List(l)) => Some(l.as_slice()),
                        _ => None,
                    }
                }
                match (list(ov), list(nv)) {
                    (Some(_) | None, Some(_) | None) if ov.is_some() || nv.is_some() => {
                        let (x, y) = self.walk_list(
                            list(ov).unwrap_or(&[]),
                            list(nv).unwrap_or(&[]),
                            &sibling_programs,
                        );
                        (ov.map(|_| Value::List(x)), nv.map(|_| Value::List(y)))
                    }
                    _ => self.walk(ov, nv),
                }
            } else if matches!(
                part,
                Part::Secret | Part::SealedSecret | Part::Toward { top: true, .. }
            ) && k == "metadata"
            {
                // A Secret's last-applied annotation is a copy of its data.
                let (mut x, mut y) = self.walk(ov, nv);
                let annotation = |v: Option<&Value>| {
                    v.and_then(|m| m.get_path(&["annotations", LAST_APPLIED]))
                        .cloned()
                };
                let (la, lb) = hide_always(annotation(ov).as_ref(), annotation(nv).as_ref());
                for (side, hidden) in [(&mut x, la), (&mut y, lb)] {
                    if let (Some(Value::Map(m)), Some(h)) = (side.as_mut(), hidden) {
                        if let Some(Value::Map(ann)) = m.get_mut("annotations") {
                            ann.insert(LAST_APPLIED.to_string(), h);
                        }
                    }
                }
                (x, y)
            } else if super::schema::is_schema_root(k) {
                // A CRD's schema names fields; it holds no values.
                self.walk_schema(None, ov, nv)
            } else if self.defaults && key_parent(k) && holds_key(ov, nv) {
                self.hide_api_key(ov, nv)
            } else if self.defaults
                && wireguard_key_parent(k)
                && holds_any(ov, nv, WIREGUARD_KEY_CHILDREN)
            {
                self.hide_named_children(ov, nv, WIREGUARD_KEY_CHILDREN)
            } else if k == "secret" && secret_volume_source(ov, nv) {
                // A Pod volume's `secret:` names the Secret it mounts
                // (`secretName`, `items`, `defaultMode`): walked, so a
                // review shows the name roll when the Secret's content
                // changes (compat34 on kapitan-reference, whose generators
                // suffix the name with a hash of the content).
                self.walk(ov, nv)
            } else if k == "serviceAccountToken" && token_volume_source(ov, nv) {
                // red39 (crd38's over-redaction left): a projected volume's
                // token source says which audience and file the kubelet
                // writes a token for; the token is never in the manifest.
                self.walk(ov, nv)
            } else if self.key_matches(k)
                || (part == Part::Receiver && receiver_key(k))
                || (part == Part::Sensitive && k == "value")
                || (jwk && jwk_private(k))
                || [ov, nv]
                    .iter()
                    .flatten()
                    .any(|v| v.as_str().is_some_and(|s| self.auth_value(k, s)))
            {
                hide(ov, nv)
            } else {
                self.walk(ov, nv)
            };
            let shown = self.credential_key(k);
            if old.is_some() {
                if let Some(x) = x {
                    insert_key(&mut a, shown.as_ref().map(|_| OLD), k, x);
                }
            }
            if new.is_some() {
                if let Some(y) = y {
                    // A token key the old map did not have is a change.
                    let placeholder = if o.contains_key(k) { OLD } else { CHANGED };
                    insert_key(&mut b, shown.as_ref().map(|_| placeholder), k, y);
                }
            }
        }
        (a, b)
    }

    /// A map key that holds a credential shape (a static token allow-list,
    /// `tokens: {ghp_…: ci-bot}`): `Some` with the key scrubbed. Every
    /// shape is at least 15 characters long, so shorter keys (most) are
    /// not read.
    fn credential_key(&self, key: &str) -> Option<String> {
        if key.len() < 15 {
            return None;
        }
        let mut out = key.to_string();
        for re in self.credentials_for(key) {
            replace_in(&mut out, re, OLD);
        }
        (out != key).then_some(out)
    }

    /// The `items` of a [`Part::ListOf`]: each item walked as `item`.
    fn walk_items(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
        item: Part,
    ) -> (Option<Value>, Option<Value>) {
        fn list(v: Option<&Value>) -> Option<&[Value]> {
            match v {
                Some(Value::List(l)) => Some(l.as_slice()),
                _ => None,
            }
        }
        match (old, new) {
            (Some(Value::List(_)) | None, Some(Value::List(_)) | None)
                if old.is_some() || new.is_some() =>
            {
                let (o, n) = (list(old).unwrap_or(&[]), list(new).unwrap_or(&[]));
                let mut a = Vec::with_capacity(o.len());
                let mut b = Vec::with_capacity(n.len());
                for i in 0..o.len().max(n.len()) {
                    let (x, y) = self.walk_part(o.get(i), n.get(i), item);
                    a.extend(x);
                    b.extend(y);
                }
                (old.map(|_| Value::List(a)), new.map(|_| Value::List(b)))
            }
            _ => self.walk(old, new),
        }
    }

    /// A map under `secrets` ([`SECRET_NAME_LISTS`]): its values are
    /// hidden at any depth (booleans and nulls stay), except under keys
    /// that name or point at a secret ([`names_a_secret_value`]), which are
    /// walked as usual. Key names stay.
    fn hide_values_under_secrets(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        match (old, new) {
            (Some(Value::Map(_)) | None, Some(Value::Map(_)) | None)
                if old.is_some() || new.is_some() =>
            {
                each_key_pair(old, new, |k, o, n| {
                    if names_a_secret_value(k) {
                        self.hide_values_under_secrets(o, n)
                    } else {
                        self.walk(o, n)
                    }
                })
            }
            _ => hide(old, new),
        }
    }

    /// Every value of a Secret's `data`/`stringData` map; key names stay.
    fn hide_children(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        match (old, new) {
            (Some(Value::Map(_)) | None, Some(Value::Map(_)) | None) => {
                each_key_pair(old, new, |_, o, n| hide_always(o, n))
            }
            _ => hide_always(old, new),
        }
    }
}

/// Two sides of a map (either may be absent) rebuilt key by key, the old
/// side's keys first: `f` maps each key's two values to what each side
/// shows (`None` drops the key from that side).
fn each_key_pair(
    old: Option<&Value>,
    new: Option<&Value>,
    mut f: impl FnMut(&str, Option<&Value>, Option<&Value>) -> (Option<Value>, Option<Value>),
) -> (Option<Value>, Option<Value>) {
    let om = old.and_then(Value::as_map);
    let nm = new.and_then(Value::as_map);
    let empty = Map::default();
    let (o, n) = (om.unwrap_or(&empty), nm.unwrap_or(&empty));
    let mut a = Map::default();
    let mut b = Map::default();
    let mut keys: Vec<&String> = o.keys().collect();
    keys.extend(n.keys().filter(|k| !o.contains_key(*k)));
    for k in keys {
        let (x, y) = f(k, o.get(k), n.get(k));
        if let Some(x) = x {
            a.insert(k.clone(), x);
        }
        if let Some(y) = y {
            b.insert(k.clone(), y);
        }
    }
    (om.map(|_| Value::Map(a)), nm.map(|_| Value::Map(b)))
}

/// A compiled Kapitan reference (`?{type:path:hash}`) whose hash changed
/// while its path stayed: the new side says so, since the hash is all a
/// review ever shows of a secret.
fn note_changed_refs(old: &str, new: &str, shown: String) -> String {
    if old == new || !new.contains("?{") {
        return shown;
    }
    let old_tags: Vec<String> = crate::refs::tags_in(old);
    let new_tags: Vec<String> = crate::refs::tags_in(new);
    let stem = |t: &str| t.rsplit_once(':').map(|(a, _)| a.to_string());
    let changed = new_tags.iter().any(|n| {
        !old_tags.contains(n)
            && old_tags
                .iter()
                .any(|o| stem(o).is_some() && stem(o) == stem(n))
    });
    if changed {
        format!("{shown} (secret changed, value not shown)")
    } else {
        shown
    }
}

/// A TOML `kind = "Secret"` (`output_type: toml` writes manifests so): a
/// `kind` key at a line's start or in an inline table whose string value
/// holds `secret` in any case once its escapes are decoded
/// (`"Sec\u0072et"`), or is a multi-line string (which can spell it over
/// lines). TOML values are quoted, so `kind=$KIND` in a shell script is
/// not read.
pub(super) fn toml_secret_kind(text: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r#"(?m)(?:^[ \t]*|[{,][ \t]*)["']?kind["']?[ \t]*=[ \t]*("""|'''|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"#,
        )
        .expect("static regex is valid")
    });
    re.captures_iter(text).any(|c| {
        let v = &c[1];
        matches!(v, r#"""""# | "'''") || decode_escapes(v).to_ascii_lowercase().contains("secret")
    })
}

/// The rest of a `kind:` line is a plain identifier that is not a Secret
/// (`ConfigMap`, `"Deployment"`, `Service, "metadata": ...` in JSON, `""`).
pub(super) fn plain_kind(rest: &str) -> bool {
    let rest = rest.trim_start();
    let (token, after) = match rest.chars().next() {
        Some(q @ ('"' | '\'')) => match rest[1..].find(q) {
            Some(end) => (&rest[1..1 + end], &rest[2 + end..]),
            None => return false,
        },
        _ => {
            let end = rest
                .find(|ch: char| ch.is_whitespace() || matches!(ch, ',' | '}' | ']' | '#'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    // Quoted, the token may be empty (`"kind": ""`); unquoted, an empty
    // token is a value on the next line and a leading character other than
    // a letter or digit may be a YAML indicator. Neither set of characters
    // can spell `Secret` through an escape, tag, anchor or alias.
    let quoted = rest.starts_with(['"', '\'']);
    let shaped = token
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-' | '/'));
    let starts = quoted || token.starts_with(|ch: char| ch.is_ascii_alphanumeric());
    let after = after.trim_start();
    shaped
        && starts
        && !token.to_ascii_lowercase().contains("secret")
        && (after.is_empty() || after.starts_with([',', '}', ']', '#']))
}

fn is_container(v: &Value) -> bool {
    matches!(v, Value::Map(_) | Value::List(_))
}

/// Where a map sits in an object whose values are hidden by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Nothing hidden by position (key patterns and shapes still apply).
    Plain,
    /// A `kind: Secret` object, or a SealedSecret's `spec.template`: its
    /// `data` and `stringData` values are hidden.
    Secret,
    /// A `kind: SealedSecret` object.
    SealedSecret,
    /// A SealedSecret's `spec`.
    SealedSpec,
    /// An object (`top`) or a map inside it on the way (`rest`) to a map
    /// that makes a Secret: an ExternalSecret's `spec.target.template`, whose
    /// `data` the operator writes into the Secret it creates.
    Toward {
        rest: &'static [&'static str],
        top: bool,
    },
    /// A list kind of one of the kinds above (`SecretList`, what the API
    /// returns for a list call, whose items carry no `kind`): each of its
    /// `items` is an object of that kind.
    ListOf(&'static str),
    /// An item of one of Alertmanager's [`SECRET_RECEIVERS`]: its
    /// [`receiver_key`]s are hidden.
    Receiver,
    /// An item of a Terraform helm_release's `set_sensitive` (`.tf.json`):
    /// its `value` is hidden.
    Sensitive,
}

/// The kinds [`Part::of_kind`] knows, as [`Part::ListOf`] names them.
const SECRET_BEARING_KINDS: &[&str] = &[
    "Secret",
    "SealedSecret",
    "ExternalSecret",
    "ClusterExternalSecret",
];

impl Part {
    pub(super) fn of(m: &Map) -> Part {
        let Some(kind) = m.get("kind").and_then(Value::as_str) else {
            return Part::Plain;
        };
        let part = Part::of_kind(kind);
        if part != Part::Plain {
            return part;
        }
        let stem = kind
            .len()
            .checked_sub(4)
            .and_then(|cut| Some((kind.get(..cut)?, kind.get(cut..)?)))
            .filter(|(_, list)| list.eq_ignore_ascii_case("List"))
            .map(|(stem, _)| stem);
        match stem.and_then(|s| {
            SECRET_BEARING_KINDS
                .iter()
                .find(|k| k.eq_ignore_ascii_case(s))
        }) {
            Some(k) => Part::ListOf(k),
            None => Part::Plain,
        }
    }

    pub(super) fn of_kind(kind: &str) -> Part {
        match kind {
            k if k.eq_ignore_ascii_case("Secret") => Part::Secret,
            k if k.eq_ignore_ascii_case("SealedSecret") => Part::SealedSecret,
            k if k.eq_ignore_ascii_case("ExternalSecret") => Part::Toward {
                rest: &["spec", "target", "template"],
                top: true,
            },
            k if k.eq_ignore_ascii_case("ClusterExternalSecret") => Part::Toward {
                rest: &["spec", "externalSecretSpec", "target", "template"],
                top: true,
            },
            _ => Part::Plain,
        }
    }

    /// The part of the value under key `k` of a map that is `self`, when
    /// that is not found from the value's own `kind`.
    pub(super) fn child(self, k: &str) -> Option<Part> {
        match self {
            Part::SealedSecret if k == "spec" => Some(Part::SealedSpec),
            // The Secret the controller makes: `template.data` is copied
            // into it unencrypted, next to the decrypted `encryptedData`.
            Part::SealedSpec if k == "template" => Some(Part::Secret),
            Part::Toward { rest, .. } if rest.first() == Some(&k) => Some(if rest.len() == 1 {
                Part::Secret
            } else {
                Part::Toward {
                    rest: &rest[1..],
                    top: false,
                }
            }),
            _ => None,
        }
    }

    /// The first that is not plain.
    pub(super) fn or(self, other: Part) -> Part {
        if self == Part::Plain {
            other
        } else {
            self
        }
    }
}

/// A YAML boolean or null written as text, which stays visible under a
/// secret key as it does in the semantic mode.
pub(super) fn is_visible_scalar(v: &str) -> bool {
    ["true", "false", "null", "~"]
        .iter()
        .any(|s| v.eq_ignore_ascii_case(s))
}

/// A value that names where a secret comes from instead of holding it,
/// whole (quotes aside): a `${NAME}` variable or property reference (and
/// `${{ secrets.NAME }}`), a template expression without a literal in it
/// (`{{ .Values.db.password }}`), or a command substitution by a program
/// that reads a file (`$(cat /run/secrets/db)`). It stays visible under a
/// secret key, so a review shows which variable a password now comes
/// from: reviewing kapicorp/kapitan-reference hid 27 such values or
/// references among 52 (compat34, compat-over-redaction-kapitan-reference).
/// `$NAME` without braces is not read (a password may start with `$`),
/// nor `$(echo X)`.
pub(super) fn is_placeholder(v: &str) -> bool {
    let v = v.trim();
    let v = ['"', '\'']
        .into_iter()
        .find_map(|q| v.strip_prefix(q).and_then(|x| x.strip_suffix(q)))
        .unwrap_or(v);
    if v.starts_with("ENC[") {
        return sops_ciphertext(v);
    }
    if !(v.starts_with("${") || v.starts_with("{{") || v.starts_with("$(")) {
        return false;
    }
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:\$\{[A-Za-z_][A-Za-z0-9_.]*\}|\$\{\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}\}|\{\{-?\s*[.$A-Za-z_][A-Za-z0-9_.$ |()\[\]]*?\s*-?\}\}|\$\((?:cat|realpath|pwd|dirname|basename|readlink)\b[^\n`;&|<>]*\))$",
        )
        .expect("static regex is valid")
    })
    .is_match(v)
}

/// red43: a SOPS-encrypted value, whole (`ENC[AES256_GCM,data:…,iv:…,
/// tag:…,type:str]`): ciphertext whose key is in a KMS or an age/PGP
/// identity, as a SealedSecret's `encryptedData` (which stays visible):
/// hiding it hid every change of a SOPS file under its secret keys.
fn sops_ciphertext(v: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^ENC\[[A-Z0-9_]+,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:[a-z]+\]$",
        )
        .expect("static regex is valid")
    })
    .is_match(v)
}

/// [`sops_ciphertext`] at the start of `rest` (a value and the text after
/// it: a line rule's value stops at `[`), to a blank, quote or `,` after
/// its `]`.
pub(super) fn starts_with_sops_ciphertext(rest: &str) -> bool {
    rest.starts_with("ENC[")
        && rest.find(']').is_some_and(|end| {
            rest[end + 1..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}'))
                && sops_ciphertext(&rest[..=end])
        })
}

/// Whether the present sides are Kubernetes secret volume sources (a
/// Pod's `volumes[].secret`, a projected volume's `sources[].secret`):
/// maps of `secretName` or `name`, `items` (each `key`, `path`, `mode`),
/// `defaultMode` and `optional` only.
fn secret_volume_source(old: Option<&Value>, new: Option<&Value>) -> bool {
    let source = |v: &Value| {
        let Value::Map(m) = v else {
            return false;
        };
        let named = ["secretName", "name"]
            .iter()
            .any(|k| m.get(*k).is_some_and(|n| matches!(n, Value::String(_))));
        let items = |v: &Value| match v {
            Value::List(l) => l.iter().all(|i| {
                i.as_map().is_some_and(|i| {
                    i.keys()
                        .all(|k| matches!(k.as_str(), "key" | "path" | "mode"))
                })
            }),
            _ => false,
        };
        named
            && m.iter().all(|(k, v)| match k.as_str() {
                "secretName" | "name" => matches!(v, Value::String(_)),
                "items" => items(v),
                "defaultMode" => matches!(v, Value::Int(_)),
                "optional" => matches!(v, Value::Bool(_)),
                _ => false,
            })
    };
    (old.is_some() || new.is_some()) && [old, new].into_iter().flatten().all(source)
}

/// Whether the present sides are a projected volume's
/// `serviceAccountToken` source: maps of `audience` and `path` (strings)
/// and `expirationSeconds` (an integer) only, `path` among them.
fn token_volume_source(old: Option<&Value>, new: Option<&Value>) -> bool {
    let source = |v: &Value| {
        v.as_map().is_some_and(|m| {
            m.contains_key("path")
                && m.iter().all(|(k, v)| match k.as_str() {
                    "audience" | "path" => matches!(v, Value::String(_)),
                    "expirationSeconds" => matches!(v, Value::Int(_)),
                    _ => false,
                })
        })
    };
    (old.is_some() || new.is_some()) && [old, new].into_iter().flatten().all(source)
}

/// Redacts a value a key pattern marked; booleans, nulls, empty strings
/// (red39: nothing is there to hide, Istio's `accessToken: ""`) and
/// [placeholders](is_placeholder) stay visible.
fn hide(old: Option<&Value>, new: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let visible = |v: Option<&Value>| {
        v.is_none_or(|v| match v {
            Value::Bool(_) | Value::Null => true,
            Value::String(s) => s.is_empty() || is_placeholder(s),
            _ => false,
        })
    };
    if visible(old) && visible(new) {
        return (old.cloned(), new.cloned());
    }
    hide_always(old, new)
}

fn hide_always(old: Option<&Value>, new: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let s = |t: &str| Some(Value::String(t.into()));
    match (old, new) {
        (Some(o), Some(n)) if o == n => (s(UNCHANGED), s(UNCHANGED)),
        (Some(_), Some(_)) => (s(OLD), s(CHANGED)),
        (Some(_), None) => (s(OLD), None),
        (None, Some(_)) => (None, s(CHANGED)),
        (None, None) => (None, None),
    }
}

/// Inserts `value` under `key`, or, for a key holding a credential, under
/// `placeholder` (numbered when the map already has it: two tokens stay two
/// entries).
fn insert_key(map: &mut Map, placeholder: Option<&str>, key: &str, value: Value) {
    let Some(placeholder) = placeholder else {
        map.insert(key.to_string(), value);
        return;
    };
    let mut name = placeholder.to_string();
    let mut n = 1;
    while map.contains_key(&name) {
        n += 1;
        name = format!("{placeholder} #{n}");
    }
    map.insert(name, value);
}

/// Whether either side is a map with a `key` entry ([`Redactor::hide_api_key`]).
fn holds_key(old: Option<&Value>, new: Option<&Value>) -> bool {
    [old, new]
        .into_iter()
        .flatten()
        .any(|v| matches!(v, Value::Map(m) if m.contains_key("key") || m.contains_key("Key")))
}

/// probe32 (red-neutral-key-under-crypto-parent): a parent whose `key`
/// (`Key`) child is a secret: the OTel Collector's Datadog exporter
/// `api: {key: X}` (probe26), ASP.NET Core's `Jwt: {Key: X}` (the bearer
/// tokens' signing key), Magento's `crypt: {key: X}`, ESPHome's
/// `encryption: {key: X}`; red41: an API gateway's key-auth plugin or
/// credential, APISIX's and Kong's `key-auth: {key: X}` (`keyauth`,
/// `key_auth`): the consumer's API key.
pub(super) fn key_parent(name: &str) -> bool {
    let name = name.trim_matches(['"', '\'']);
    [
        "api",
        "jwt",
        "crypt",
        "encryption",
        "key-auth",
        "key_auth",
        "keyauth",
    ]
    .iter()
    .any(|p| name.eq_ignore_ascii_case(p))
}

/// probe35 (red-netplan-wireguard-keys): netplan's WireGuard tunnel,
/// `key: {private: X}` and a peer's `keys: {public: …, shared: X}` (the
/// private key and the preshared key; `public` stays).
pub(super) fn wireguard_key_parent(name: &str) -> bool {
    matches!(name.trim_matches(['"', '\'']), "key" | "keys")
}

/// The children of [`wireguard_key_parent`] that are secrets.
pub(super) const WIREGUARD_KEY_CHILDREN: &[&str] = &["private", "shared"];

/// Whether either side is a map with one of `names`.
fn holds_any(old: Option<&Value>, new: Option<&Value>, names: &[&str]) -> bool {
    [old, new]
        .into_iter()
        .flatten()
        .any(|v| matches!(v, Value::Map(m) if names.iter().any(|n| m.contains_key(*n))))
}

impl Redactor {
    /// probe26: the OpenTelemetry Collector's Datadog exporter, `api: {key:
    /// X, site: …}`: the map walked as any other, its `key` hidden.
    fn hide_api_key(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        self.hide_named_children(old, new, &["key", "Key"])
    }

    /// A map walked as any other, its children `names` hidden.
    fn hide_named_children(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
        names: &[&str],
    ) -> (Option<Value>, Option<Value>) {
        let (mut x, mut y) = self.walk(old, new);
        for &name in names {
            let key = |v: Option<&Value>| v.and_then(|m| m.get_path(&[name])).cloned();
            let (ka, kb) = hide(key(old).as_ref(), key(new).as_ref());
            for (side, hidden) in [(&mut x, ka), (&mut y, kb)] {
                if let (Some(Value::Map(m)), Some(h)) = (side.as_mut(), hidden) {
                    m.insert(name.to_string(), h);
                }
            }
        }
        (x, y)
    }
}

/// `ARR[N]` of a Helm parameter's name that ends in `.name`/`.key`
/// (`value` false) or `.value` (`value` true): `env[0].value` gives
/// `("env", "0")`.
fn helm_indexed_name(name: &str, value: bool) -> Option<(&str, &str)> {
    let (head, field) = name.rsplit_once("].")?;
    let wanted = if value {
        field == "value"
    } else {
        field == "name" || field == "key"
    };
    let (arr, idx) = head.rsplit_once('[')?;
    (wanted && !arr.is_empty() && !idx.is_empty() && idx.bytes().all(|b| b.is_ascii_digit()))
        .then_some((arr, idx))
}

/// The `(ARR, N)` pairs a list of Helm parameters names secret: an item
/// `{name: ARR[N].name, value: DB_PASSWORD}` (Argo CD's
/// `helm.parameters`, helmfile's `set`), `value` matching the key rules.
fn helm_secret_indexes<'a>(
    items: impl Iterator<Item = (&'a str, &'a str)>,
    secret: impl Fn(&str) -> bool,
) -> HashSet<(&'a str, &'a str)> {
    items
        .filter(|(_, value)| secret(value))
        .filter_map(|(name, _)| helm_indexed_name(name, false))
        .collect()
}

/// The `value:` lines of Helm parameter items `{name: ARR[N].value,
/// value: X}` whose `ARR[N].name` item names a secret
/// ([`helm_secret_indexes`]), in a block list of `name`/`value` maps (the
/// line rule reads one line at a time: the pair spans two items).
pub(super) fn helm_parameter_value_lines(
    text: &str,
    line_re: &Regex,
    secret: impl Fn(&str) -> bool,
) -> HashSet<usize> {
    // Each item: its key column, its name, its value and the value's line.
    struct Item<'t> {
        col: usize,
        name: Option<&'t str>,
        value: Option<(&'t str, usize)>,
    }
    let mut items: Vec<Item<'_>> = Vec::new();
    let mut open = false;
    for (i, line) in text.split('\n').enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let Some(c) = line_re.captures(line) else {
            open = open && !trimmed.starts_with("- ");
            continue;
        };
        let col = c[1].trim_end_matches(['"', '\'']).len();
        if trimmed.starts_with("- ") {
            items.push(Item {
                col,
                name: None,
                value: None,
            });
            open = true;
        } else if !open || items.last().is_some_and(|it| it.col != col) {
            open = open && items.last().is_some_and(|it| col > it.col);
            continue;
        }
        let (Some(key), Some(v)) = (c.get(2), c.get(4)) else {
            continue;
        };
        let v = v.as_str().trim().trim_matches(['"', '\'']);
        if let Some(it) = items.last_mut() {
            match key.as_str() {
                "name" => it.name = Some(v),
                "value" => it.value = Some((v, i)),
                _ => {}
            }
        }
    }
    let pairs = items.iter().filter_map(|it| Some((it.name?, it.value?.0)));
    let secret_indexes = helm_secret_indexes(pairs, secret);
    items
        .iter()
        .filter_map(|it| {
            let at = helm_indexed_name(it.name?, true)?;
            secret_indexes.contains(&at).then_some(it.value?.1)
        })
        .collect()
}

impl Redactor {
    /// Helm parameters as list items (Argo CD's `helm.parameters`):
    /// the `value` of an item named `ARR[N].value` whose `ARR[N].name`
    /// item names a secret ([`helm_secret_indexes`]), on either side.
    fn hide_helm_parameter_items(
        &self,
        o: &[Value],
        n: &[Value],
        a: &mut [Value],
        b: &mut [Value],
    ) {
        fn pair(v: &Value) -> Option<(&str, &str)> {
            let Value::Map(m) = v else {
                return None;
            };
            Some((m.get("name")?.as_str()?, m.get("value")?.as_str()?))
        }
        fn value_item(l: &[Value], i: usize) -> Option<(&str, &str)> {
            l.get(i)
                .and_then(pair)
                .and_then(|(name, _)| helm_indexed_name(name, true))
        }
        if !(0..o.len().max(n.len()))
            .any(|i| value_item(o, i).is_some() || value_item(n, i).is_some())
        {
            return;
        }
        let secret = |k: &str| self.key_matches(k);
        let (so, sn) = (
            helm_secret_indexes(o.iter().filter_map(pair), secret),
            helm_secret_indexes(n.iter().filter_map(pair), secret),
        );
        fn value(l: &[Value], i: usize) -> Option<&Value> {
            match l.get(i) {
                Some(Value::Map(m)) => m.get("value"),
                _ => None,
            }
        }
        for i in 0..o.len().max(n.len()) {
            let hit = value_item(o, i).is_some_and(|at| so.contains(&at))
                || value_item(n, i).is_some_and(|at| sn.contains(&at));
            if !hit {
                continue;
            }
            let (x, y) = hide(value(o, i), value(n, i));
            if let (Some(x), Some(Value::Map(m))) = (x, a.get_mut(i)) {
                m.insert("value".to_string(), x);
            }
            if let (Some(y), Some(Value::Map(m))) = (y, b.get_mut(i)) {
                m.insert("value".to_string(), y);
            }
        }
    }
}
