// The echo component: a Deployment and a Service built from the inventory.
local kap = import 'lib/kapitan.libjsonnet';
local inv = kap.inventory();
local p = inv.parameters.echo;
local labels = inv.parameters.labels { 'app.kubernetes.io/name': 'echo' };

{
  deployment: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'echo', namespace: inv.parameters.namespace, labels: labels },
    spec: {
      replicas: p.replicas,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'echo' } },
      template: {
        metadata: { labels: labels },
        spec: {
          containers: [{
            name: 'echo',
            image: p.image,
            ports: [{ containerPort: p.port }],
          }],
        },
      },
    },
  },
  service: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'echo', namespace: inv.parameters.namespace, labels: labels },
    spec: {
      selector: { 'app.kubernetes.io/name': 'echo' },
      ports: [{ port: 80, targetPort: p.port }],
    },
  },
}
