// The default commit message template (Handlebars): the change's title, a blank line, its body.
// Trailers are appended after whatever the template renders. Override with --commit-template.
export const COMMIT_MESSAGE_TEMPLATE = `{{title}}
{{#if body}}

{{body}}
{{/if}}
`;
