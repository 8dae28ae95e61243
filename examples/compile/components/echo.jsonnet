// The echo server: a Deployment and a Service per cluster, from the
// inventory's `echo`, `namespace` and `labels` parameters.
local kap = import 'lib/kapitan.libjsonnet';
local p = kap.inventory().parameters;
local labels = p.labels { 'app.kubernetes.io/name': 'echo' };
local meta = { name: 'echo', namespace: p.namespace, labels: labels };
{
  deployment: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta,
    spec: {
      replicas: p.echo.replicas,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'echo' } },
      template: {
        metadata: { labels: labels },
        spec: {
          containers: [{
            name: 'echo',
            image: p.echo.image,
            ports: [{ name: 'http', containerPort: p.echo.port }],
          }],
        },
      },
    },
  },
  service: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta,
    spec: {
      selector: { 'app.kubernetes.io/name': 'echo' },
      ports: [{ name: 'http', port: 80, targetPort: 'http' }],
    },
  },
}
