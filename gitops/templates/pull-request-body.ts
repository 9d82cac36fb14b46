// The default pull request body (Handlebars, GitHub Markdown). Override with --pr-template <file>;
// the data it receives is PullRequestData (src/render/pull-request-body.ts).
export const PULL_REQUEST_BODY_TEMPLATE = `Rendered by clusterstack-gitops from ClusterStack and Cluster specs. Merging applies it through
Argo CD or Flux; closing it changes nothing.

{{#if stacks.length}}
## ClusterStacks

{{#each stacks}}
### {{namespace}}/{{name}}

{{#if added.length}}- Releases appearing: {{#each added}}\`{{this}}\`{{#unless @last}}, {{/unless}}{{/each}}
{{/if}}
{{#if removed.length}}- Releases disappearing (Argo CD or Flux prunes them): {{#each removed}}\`{{this}}\`{{#unless @last}}, {{/unless}}{{/each}}
{{/if}}
{{#if updated.length}}- Releases re-rendered: {{#each updated}}\`{{this}}\`{{#unless @last}}, {{/unless}}{{/each}}
{{/if}}
- Latest release: {{#if latestRelease}}\`{{latestRelease}}\`{{else}}none{{/if}}; usable versions: {{#if usableVersions}}{{usableVersions}}{{else}}none{{/if}}

{{/each}}
{{/if}}
{{#if clusters.length}}
## Clusters

| Cluster | Change | Release | Addons | Stages |
| --- | --- | --- | --- | --- |
{{#each clusters}}
| {{namespace}}/{{cluster}} | {{change}} | {{release}} | {{addons}} | {{stages}} |
{{/each}}

{{/if}}
{{#if upgrades.length}}
## Upgrade order

The addons of the target release are published first; with the runtime extension (deploy/runtime-extension) its hooks hold the control plane until they are applied. Without it, nothing orders steps 1 and 3.

{{#each upgrades}}
### {{namespace}}/{{cluster}} (\`{{from}}\` → \`{{to}}\`, cluster addon {{addonsFrom}} → {{addonsTo}})

{{#each steps}}
{{this}}
{{/each}}

{{/each}}

{{/if}}
{{#if shared.length}}
## Shared objects

Written once in \`management/<namespace>/shared/\` while more than one kept release renders them.

| Object file | Change | Rendered by |
| --- | --- | --- |
{{#each shared}}
| \`{{path}}\` | {{change}} | {{renderedBy}} |
{{/each}}

{{/if}}
{{#if layers.length}}
## Addon layers

| Cluster | Layer | Version | Status | After | Why / waiting on |
| --- | --- | --- | --- | --- | --- |
{{#each layers}}
| {{namespace}}/{{cluster}} | {{layer}} | {{version}} | {{status}} | {{#if after.length}}{{join after ", "}}{{else}}-{{/if}} | {{#if reason}}{{reason}}{{else}}{{#if waitingOn.length}}{{join waitingOn ", "}}{{else}}-{{/if}}{{/if}} |
{{/each}}

{{/if}}
{{#if hooks.length}}
## Helm hooks

Hook objects of the charts this change renders, and what becomes of each (\`before\`/\`after\` the unit's objects, \`with-objects\`, \`on-delete\`, \`never\` applied, or \`dropped\`: not written; the tree's README lists every unit).

| Object | Hook (weight) | Applied | Where | Why | Units |
| --- | --- | --- | --- | --- | --- |
{{#each hooks}}
| {{object}} | {{events}} ({{weight}}) | {{decision}} | {{where}} | {{reason}} | {{units}} |
{{/each}}

{{/if}}
{{#if providers.length}}
## Cluster API providers

{{#each providers}}
- {{this}}
{{/each}}

{{/if}}
{{#if pendingRequests.length}}
## ClusterRequests not granted

| ClusterRequest | Purpose | Reason | Cluster kept | Why |
| --- | --- | --- | --- | --- |
{{#each pendingRequests}}
| {{namespace}}/{{name}} | {{#if purpose}}{{purpose}}{{else}}-{{/if}} | {{reason}} | {{#if cluster}}{{cluster}}{{else}}-{{/if}} | {{message}} |
{{/each}}

{{/if}}
{{#if withheld.length}}
## Withheld

{{#each withheld}}
- {{kind}} {{namespace}}/{{name}}{{#if layer}} layer {{layer}}{{/if}}: {{reason}}{{#if previousKept}} (previous output kept){{/if}}
{{/each}}

{{/if}}
## Stacks, releases and clusters

\`\`\`mermaid
{{mermaid}}
\`\`\`

Input digest: \`{{inputDigest}}\`
`;
