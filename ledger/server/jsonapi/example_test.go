package jsonapi_test

import (
	"encoding/json"
	"fmt"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
)

// A transfer's result as the HTTP API answers it.
func Example() {
	r := ledger.Result{ID: 7, Kind: ledger.KindTransfer, Timestamp: 1_700_000_000_000_000_000,
		Ledger: 1, Code: 3, UserData: 42,
		Entries: []ledger.Entry{
			{Account: 1, Column: ledger.DebitsPosted, Delta: 250, Value: 250},
			{Account: 2, Column: ledger.CreditsPosted, Delta: 250, Value: 1250},
		}}
	b, err := json.Marshal(jsonapi.NewResult(&r))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	// Output:
	// {"id":7,"kind":"transfer","fail":"ok","timestamp":1700000000000000000,"entries":[{"account":1,"column":"debits_posted","delta":250,"value":250},{"account":2,"column":"credits_posted","delta":250,"value":1250}],"transfer":{"ledger":1,"code":3,"flags":[],"user_data":42}}
}
