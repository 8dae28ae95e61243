//! Benchmark for `strata template`: 40 templates, 10 data values files and
//! 10 overlay files (about 6,000 output lines), evaluated in process.
//! Run with `cargo bench --bench template`; prints the mean time per run.

use std::time::Instant;
use strata::template::eval::SrcFile;
use strata::template::{run, Options};

fn inputs() -> Vec<SrcFile> {
    let mut files = Vec::new();
    files.push(SrcFile::new(
        "values/00-schema.yml",
        "#@data/values-schema\n---\nnamespace: default\nreplicas: 1\nimage_tag: v1\nlabels:\n  team: core\nports:\n- 80\nenv:\n- name: \"\"\n  value: \"\"\n",
    ));
    for i in 0..10 {
        files.push(SrcFile::new(
            format!("values/{:02}-values.yml", i + 1),
            format!(
                "#@data/values\n---\nreplicas: {}\nimage_tag: v{}\nports:\n- {}\nenv:\n- name: VAR_{i}\n  value: \"{i}\"\n",
                i + 2,
                i + 1,
                8000 + i
            ),
        ));
    }
    for t in 0..40 {
        files.push(SrcFile::new(
            format!("config/app{t:02}.yml"),
            format!(
                r#"#@ load("@ytt:data", "data")
#@ def labels(component):
app: app{t}
component: #@ component
team: #@ data.values.labels.team
#@ end
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app{t}
  namespace: #@ data.values.namespace
  labels: #@ labels("web")
spec:
  replicas: #@ data.values.replicas
  selector:
    matchLabels: #@ labels("web")
  template:
    metadata:
      labels: #@ labels("web")
    spec:
      containers:
      - name: app
        image: #@ "registry.example.com/app{t}:" + data.values.image_tag
        ports:
        #@ for p in data.values.ports:
        - containerPort: #@ p
          protocol: TCP
        #@ end
        env:
        #@ for e in data.values.env:
        - name: #@ e.name
          value: #@ e.value
        #@ end
        resources:
          limits:
            cpu: 500m
            memory: 256Mi
---
apiVersion: v1
kind: Service
metadata:
  name: app{t}
  namespace: #@ data.values.namespace
  labels: #@ labels("svc")
spec:
  selector: #@ labels("web")
  ports:
  #@ for p in data.values.ports:
  - port: #@ p
    targetPort: #@ p
  #@ end
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app{t}-config
data: #@ {{"key-" + str(i): "value-" + str(i) for i in range(25)}}
"#
            ),
        ));
    }
    for o in 0..10 {
        files.push(SrcFile::new(
            format!("overlays/ov{o:02}.yml"),
            format!(
                r#"#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.subset({{"kind": "Deployment"}}), expects="1+"
---
metadata:
  #@overlay/match missing_ok=True
  annotations:
    #@overlay/match missing_ok=True
    overlay-{o}: applied
"#
            ),
        ));
    }
    files
}

fn main() {
    let opts = Options {
        files: inputs(),
        ..Default::default()
    };
    // `STRATA_BENCH_DUMP=dir` writes the inputs, to time the CLI on them
    if let Some(dir) = std::env::var_os("STRATA_BENCH_DUMP") {
        for f in &opts.files {
            let p = std::path::Path::new(&dir).join(&f.path);
            std::fs::create_dir_all(p.parent().expect("file in a directory")).expect("mkdir");
            std::fs::write(&p, &f.text).expect("write input");
        }
    }
    let out = run(&opts).expect("benchmark templates render");
    let lines = out.to_yaml().lines().count();
    let runs = 20;
    let start = Instant::now();
    for _ in 0..runs {
        let out = run(&opts).expect("benchmark templates render");
        std::hint::black_box(out.to_yaml());
    }
    let per_run = start.elapsed() / runs;
    println!(
        "strata template: 40 templates, 10 data values files, 10 overlays -> {lines} lines: {:.1} ms per run (mean of {runs})",
        per_run.as_secs_f64() * 1000.0
    );
}
