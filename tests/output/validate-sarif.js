// SPDX-License-Identifier: MIT
//
// node tests/output/validate-sarif.js NODE_MODULES SCHEMA FILE...
//
// Validates each SARIF FILE against SCHEMA, the SARIF 2.1.0 JSON schema
// (draft-04, as OASIS published it: sarif-2.1.0-rtm.5.json), with ajv 6
// from NODE_MODULES, set up as Microsoft's own @microsoft/jest-sarif
// matcher sets it up. Prints "FILE: PATH MESSAGE" per violation; exits 1
// if any FILE does not validate, 2 if the validator cannot start.
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, schemaPath, ...files] = process.argv.slice(2);
let Ajv, draft4;
try {
	Ajv = require(path.resolve(modules, 'ajv'));
	draft4 = require(path.resolve(modules, 'ajv/lib/refs/json-schema-draft-04.json'));
} catch (e) {
	console.error(`validate-sarif: cannot load ajv from ${modules}: ${e.message}`);
	process.exit(2);
}
const ajv = new Ajv({ schemaId: 'auto', allErrors: true, validateSchema: false });
ajv.addMetaSchema(draft4);
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
let bad = 0;
for (const f of files) {
	let doc;
	try {
		doc = JSON.parse(fs.readFileSync(f, 'utf8'));
	} catch (e) {
		console.log(`${f}: not JSON: ${e.message}`);
		bad++;
		continue;
	}
	if (!validate(doc)) {
		bad++;
		for (const err of validate.errors)
			console.log(`${f}: ${err.dataPath || '/'} ${err.message}`);
	}
}
process.exit(bad ? 1 : 0);
